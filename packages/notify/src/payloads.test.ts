import { compileMessageTemplate } from '@syncline/render';
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { NotificationEvent } from './event.ts';
import { SLACK_POST_MESSAGE_URL, chatRequest, signature } from './payloads.ts';

const event: NotificationEvent = {
  kind: 'ConfigSync',
  namespace: 'apps',
  name: 'web',
  labels: {},
  severity: 'error',
  reason: 'RenderFailed',
  category: 'Failed',
  message: 'app/deploy.yaml.hbs:7: missing value "image" <b>',
  recovered: false,
  revision: '0123456789ab',
  timestamp: '2026-11-25T12:00:00.000Z',
};
const message = { event, alert: 'apps/on-call', summary: 'cluster east' };
const HOOK = 'https://hooks.example.com/services/T000/B000/secret';

describe('Slack', () => {
  it('incoming webhook: text and blocks, mrkdwn escaped, posted to the hook URL', () => {
    const request = chatRequest({ type: 'slack' }, { address: HOOK }, message);
    expect(request.url).toBe(HOOK);
    expect(request.headers['content-type']).toBe('application/json');
    const body = JSON.parse(request.body) as { text: string; blocks: { type: string; text?: { type: string; text: string } }[] };
    expect(body.text).toContain('app/deploy.yaml.hbs:7');
    expect(body.blocks.map((b) => b.type)).toEqual(['header', 'section', 'context']);
    expect(body.blocks[1]?.text).toEqual({ type: 'mrkdwn', text: 'app/deploy.yaml.hbs:7: missing value "image" &lt;b&gt;' });
  });

  it('chat.postMessage: Bearer token, channel, JSON with charset', () => {
    const request = chatRequest({ type: 'slack', channel: '#deploys' }, { token: 'xoxb-1' }, message);
    expect(request.url).toBe(SLACK_POST_MESSAGE_URL);
    expect(request.headers).toMatchObject({ authorization: 'Bearer xoxb-1', 'content-type': 'application/json; charset=utf-8' });
    expect(JSON.parse(request.body)).toMatchObject({ channel: '#deploys' });
  });

  it('chat.postMessage without a channel is refused without naming the token', () => {
    expect(() => chatRequest({ type: 'slack' }, { token: 'xoxb-secret' }, message)).toThrow(/spec\.channel/);
    try {
      chatRequest({ type: 'slack' }, { token: 'xoxb-secret' }, message);
    } catch (error) {
      expect(String(error)).not.toContain('xoxb-secret');
    }
  });
});

describe('Microsoft Teams (Workflows webhook)', () => {
  it('a message with one Adaptive Card attachment', () => {
    const body = JSON.parse(chatRequest({ type: 'msteams' }, { address: HOOK }, message).body) as {
      type: string;
      attachments: { contentType: string; contentUrl: null; content: { type: string; version: string; body: { type: string }[] } }[];
    };
    expect(body.type).toBe('message');
    expect(body.attachments).toHaveLength(1);
    expect(body.attachments[0]?.contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(body.attachments[0]?.contentUrl).toBeNull();
    expect(body.attachments[0]?.content).toMatchObject({ type: 'AdaptiveCard', version: '1.4' });
    expect(body.attachments[0]?.content.body.map((b) => b.type)).toEqual(['TextBlock', 'TextBlock', 'FactSet']);
  });
});

describe('Discord', () => {
  it('one embed within the limits, no mentions parsed', () => {
    const long = { ...message, event: { ...event, message: 'x'.repeat(5000) } };
    const body = JSON.parse(chatRequest({ type: 'discord', username: 'syncline' }, { address: HOOK }, long).body) as {
      username: string;
      allowed_mentions: unknown;
      embeds: { title: string; description: string; color: number; timestamp: string }[];
    };
    expect(body.username).toBe('syncline');
    expect(body.allowed_mentions).toEqual({ parse: [] });
    expect(body.embeds[0]?.description.length).toBe(4096);
    expect(body.embeds[0]?.title.length).toBeLessThanOrEqual(256);
    expect(body.embeds[0]?.timestamp).toBe(event.timestamp);
  });
});

describe('generic webhook', () => {
  it('the event as JSON, signed with HMAC-SHA256 of the body when a key is given', () => {
    const request = chatRequest({ type: 'webhook' }, { address: HOOK, hmacKey: 'k3y' }, message);
    expect(JSON.parse(request.body)).toMatchObject({ kind: 'ConfigSync', reason: 'RenderFailed', alert: 'apps/on-call', summary: 'cluster east' });
    const expected = `sha256=${createHmac('sha256', 'k3y').update(request.body).digest('hex')}`;
    expect(request.headers['x-syncline-signature']).toBe(expected);
    expect(signature('k3y', request.body)).toBe(expected);
  });

  it('unsigned without a key', () => {
    expect(chatRequest({ type: 'webhook' }, { address: HOOK }, message).headers['x-syncline-signature']).toBeUndefined();
  });

  it('a Handlebars template body with its content type, {{json}} for JSON strings', () => {
    const template = compileMessageTemplate('{"text": {{json message}}, "who": "{{namespace}}/{{name}}"}');
    const request = chatRequest({ type: 'webhook', template, contentType: 'application/vnd.example+json' }, { address: HOOK }, message);
    expect(request.headers['content-type']).toBe('application/vnd.example+json');
    expect(JSON.parse(request.body)).toEqual({ text: event.message, who: 'apps/web' });
  });

  it('a template that does not compile fails when it is read', () => {
    expect(() => compileMessageTemplate('{{#if x}}')).toThrow();
  });
});
