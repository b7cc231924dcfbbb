// Batches in each receiver's own multi-message form: the same words as one message at a time, joined, and split
// where a receiver's documented limit would be passed.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BATCH_LIMITS, chatBatchRequests, split } from './batch-payloads.ts';
import type { NotificationEvent } from './event.ts';
import { SLACK_POST_MESSAGE_URL, discordBody, slackBody, teamsItems, webhookBody, type Message } from './payloads.ts';

const HOOK = 'https://hooks.example.com/services/T000/B000/secret';

const messageOf = (i: number, text = `applied ${i} objects`): Message => {
  const event: NotificationEvent = {
    kind: 'ConfigSync',
    namespace: 'apps',
    name: `web-${i}`,
    labels: {},
    severity: i % 2 === 0 ? 'info' : 'error',
    reason: 'Synced',
    category: 'Applied',
    message: text,
    recovered: false,
    revision: '0123456789ab',
    timestamp: '2026-11-25T12:00:00.000Z',
  };
  return { event, alert: `apps/alert-${i}`, summary: 'cluster east' };
};
const messages = (n: number, text?: (i: number) => string): Message[] => Array.from({ length: n }, (_, i) => messageOf(i, text?.(i)));
const counts = (requests: { count: number }[]): number[] => requests.map((r) => r.count);

describe('split', () => {
  it('runs within the count and the weight; a part heavier than the limit goes alone', () => {
    const parts = [1, 2, 3, 10, 1, 1].map((weight) => ({ json: '', weight }));
    expect(split(parts, { parts: 10, weight: 5 })).toEqual([2, 1, 1, 2]);
    expect(split(parts, { parts: 2, weight: Infinity })).toEqual([2, 2, 2]);
    expect(split(parts, { parts: 10, weight: 5 }, 3)).toEqual([1, 1, 1, 1, 2]);
    expect(split([], { parts: 10, weight: 5 })).toEqual([]);
  });
});

describe('webhook batches', () => {
  it('one JSON array of the event objects the unbatched webhook sends, signed as one body', () => {
    const batch = messages(3);
    const requests = chatBatchRequests({ type: 'webhook' }, { address: HOOK, hmacKey: 'k' }, batch);
    expect(counts(requests)).toEqual([3]);
    const [{ request } = { request: undefined }] = requests;
    expect(request?.url).toBe(HOOK);
    expect(request?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request?.body ?? '')).toEqual(batch.map((m) => webhookBody(m)));
    expect(request?.headers['x-syncline-signature']).toBe(
      `sha256=${createHmac('sha256', 'k')
        .update(request?.body ?? '')
        .digest('hex')}`,
    );
  });

  it('a batch of one is an array too; no hmacKey, no signature; no address, an error', () => {
    const [only] = chatBatchRequests({ type: 'webhook' }, { address: HOOK }, messages(1));
    expect(JSON.parse(only?.request.body ?? '')).toHaveLength(1);
    expect(only?.request.headers['x-syncline-signature']).toBeUndefined();
    expect(() => chatBatchRequests({ type: 'webhook' }, {}, messages(1))).toThrow(/webhook needs a URL/);
  });
});

describe('Discord batches', () => {
  it('up to 10 embeds per message, each the embed of the unbatched message', () => {
    const batch = messages(25);
    const requests = chatBatchRequests({ type: 'discord', username: 'syncline' }, { address: HOOK }, batch);
    expect(counts(requests)).toEqual([10, 10, 5]);
    const embeds = requests.flatMap((r) => (JSON.parse(r.request.body) as { embeds: unknown[] }).embeds);
    expect(embeds).toEqual(batch.map((m) => (discordBody({}, m)['embeds'] as unknown[])[0]));
    for (const r of requests) expect(JSON.parse(r.request.body)).toMatchObject({ username: 'syncline', allowed_mentions: { parse: [] } });
  });

  it('6,000 characters across the embeds of a message at most: long messages are split', () => {
    const requests = chatBatchRequests(
      { type: 'discord' },
      { address: HOOK },
      messages(6, () => 'x'.repeat(2500)),
    );
    for (const r of requests) {
      const { embeds } = JSON.parse(r.request.body) as { embeds: { title: string; description: string; fields: { name: string; value: string }[] }[] };
      const characters = embeds.reduce(
        (sum, e) => sum + e.title.length + e.description.length + e.fields.reduce((s, f) => s + f.name.length + f.value.length, 0),
        0,
      );
      expect(characters).toBeLessThanOrEqual(BATCH_LIMITS.discord.weight);
    }
    expect(counts(requests)).toEqual([2, 2, 2]);
  });
});

describe('Slack batches', () => {
  it('one message of the blocks of each, a divider between two, at most 50 blocks; the text names the first and how many more', () => {
    const batch = messages(30);
    const requests = chatBatchRequests({ type: 'slack' }, { address: HOOK }, batch);
    expect(counts(requests)).toEqual([12, 12, 6]);
    let at = 0;
    for (const r of requests) {
      const body = JSON.parse(r.request.body) as { text: string; blocks: { type: string }[] };
      expect(body.blocks.length).toBeLessThanOrEqual(50);
      const own = batch.slice(at, at + r.count).map((m) => slackBody({}, m) as { text: string; blocks: unknown[] });
      expect(body.blocks).toEqual(own.flatMap((b, i) => (i === 0 ? b.blocks : [{ type: 'divider' }, ...b.blocks])));
      expect(body.text).toBe(`${own[0]?.text ?? ''} (and ${r.count - 1} more)`);
      at += r.count;
    }
  });

  it('chat.postMessage with a token: its URL, Bearer token and channel; long texts split at 12,000 characters of blocks', () => {
    const requests = chatBatchRequests(
      { type: 'slack', channel: '#deploys' },
      { token: 'xoxb-1' },
      messages(10, () => 'y'.repeat(2800)),
    );
    expect(counts(requests)).toEqual([4, 4, 2]);
    for (const r of requests) {
      expect(r.request.url).toBe(SLACK_POST_MESSAGE_URL);
      expect(r.request.headers).toMatchObject({ authorization: 'Bearer xoxb-1' });
      expect(JSON.parse(r.request.body)).toMatchObject({ channel: '#deploys' });
    }
    const [single] = chatBatchRequests({ type: 'slack' }, { address: HOOK }, messages(1));
    expect(JSON.parse(single?.request.body ?? '')).toEqual(slackBody({}, messageOf(0)));
  });
});

describe('Microsoft Teams batches', () => {
  it('one Adaptive Card with a section per message, 27,000 bytes a request at most', () => {
    const batch = messages(40, (i) => `${'ü'.repeat(1500)} ${i}`);
    const requests = chatBatchRequests({ type: 'msteams' }, { address: HOOK }, batch);
    expect(requests.length).toBeGreaterThan(1);
    expect(counts(requests).reduce((a, b) => a + b, 0)).toBe(40);
    const sections: unknown[] = [];
    for (const r of requests) {
      expect(Buffer.byteLength(r.request.body)).toBeLessThanOrEqual(BATCH_LIMITS.msteams.weight);
      const body = JSON.parse(r.request.body) as {
        type: string;
        attachments: { contentType: string; content: { type: string; body: { type: string; separator: boolean; items: unknown[] }[] } }[];
      };
      expect(body.type).toBe('message');
      expect(body.attachments).toHaveLength(1);
      expect(body.attachments[0]?.contentType).toBe('application/vnd.microsoft.card.adaptive');
      expect(body.attachments[0]?.content.type).toBe('AdaptiveCard');
      for (const section of body.attachments[0]?.content.body ?? []) {
        expect(section).toMatchObject({ type: 'Container', separator: true });
        sections.push(section.items);
      }
    }
    expect(sections).toEqual(batch.map((m) => teamsItems(m)));
  });

  it('small messages: one card for all', () => {
    expect(counts(chatBatchRequests({ type: 'msteams' }, { address: HOOK }, messages(20)))).toEqual([20]);
  });
});
