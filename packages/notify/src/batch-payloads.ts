// Batches of chat and webhook messages in each receiver's own multi-message form (a NotificationProvider's
// spec.batch), split into several requests where one would pass the receiver's limit. Each message is rendered once:
// its part of the body as JSON text, with its weight against the limit; a request's body is its parts joined. Pure,
// like payloads.ts: the delivery sends what this returns.
import { addressOf, discordBody, signature, SIGNATURE_HEADER, slackBody, slackDestination, teamsItems, teamsMessage, webhookBody } from './payloads.ts';
import type { ChatProvider, Message, OutgoingRequest, ProviderCredentials } from './payloads.ts';

/** One request of a batch and how many of the batch's messages it carries (the next ones, in order). */
export type BatchRequest = { readonly request: OutgoingRequest; readonly count: number };

/**
 * What one request may carry, as the receivers document it: `parts` messages and `weight` in their measure.
 * Discord: 10 embeds per message, 6,000 characters across the titles, descriptions and field names and values of
 * all its embeds. Slack: 50 blocks per message; a message is 3 blocks and a divider separates two, so 12 messages;
 * Slack also refuses a message whose blocks hold much more than 12,000 characters of text (msg_blocks_too_long),
 * so at most that. Teams: about 28 KB per message (Workflows answer 413 past it): 27,000 bytes of body with the
 * envelope. The generic webhook documents no limit of its own: a batch (at most spec.batch.maxEvents) is one array.
 */
export const BATCH_LIMITS = {
  discord: { parts: 10, weight: 6000 },
  slack: { parts: 12, weight: 12_000 },
  msteams: { parts: Infinity, weight: 27_000 },
  webhook: { parts: Infinity, weight: Infinity },
} as const;

/** A message rendered for a batch: its JSON text and its weight against the receiver's limit. */
type Part = { readonly json: string; readonly weight: number };

/** The requests that deliver `messages` (at least one) in batches. Throws when a credential the type needs is missing. */
export function chatBatchRequests(provider: ChatProvider, credentials: ProviderCredentials, messages: readonly Message[]): BatchRequest[] {
  switch (provider.type) {
    case 'slack':
      return slackBatch(provider, credentials, messages);
    case 'msteams':
      return teamsBatch(credentials, messages);
    case 'discord':
      return discordBatch(provider, credentials, messages);
    case 'webhook':
      return webhookBatch(credentials, messages);
  }
}

/**
 * Consecutive runs of `parts`, each within `limit` (its `weight` less `envelope`, what every request carries anyway):
 * how many parts each run holds. A part heavier than the limit on its own goes alone (as it would unbatched).
 */
export function split(parts: readonly Part[], limit: { readonly parts: number; readonly weight: number }, envelope = 0): number[] {
  const runs: number[] = [];
  let count = 0;
  let weight = envelope;
  for (const part of parts) {
    if (count > 0 && (count >= limit.parts || weight + part.weight > limit.weight)) {
      runs.push(count);
      count = 0;
      weight = envelope;
    }
    count++;
    weight += part.weight;
  }
  if (count > 0) runs.push(count);
  return runs;
}

/** One request per run of `split`, made by `request` from the run's parts. */
function requests(
  parts: readonly Part[],
  runs: readonly number[],
  request: (partsOfRun: readonly Part[], messagesOfRun: number) => OutgoingRequest,
): BatchRequest[] {
  const out: BatchRequest[] = [];
  let at = 0;
  for (const count of runs) {
    out.push({ request: request(parts.slice(at, at + count), count), count });
    at += count;
  }
  return out;
}

/** A JSON object's text without its closing brace, to append members to. */
const open = (object: Record<string, unknown>): string => JSON.stringify(object).slice(0, -1);

/** webhook: a JSON array of the event objects the unbatched type sends one at a time; the HMAC signs the whole body. */
function webhookBatch(credentials: ProviderCredentials, messages: readonly Message[]): BatchRequest[] {
  const url = addressOf('webhook', credentials);
  const parts = messages.map((m): Part => ({ json: JSON.stringify(webhookBody(m)), weight: 0 }));
  return requests(parts, split(parts, BATCH_LIMITS.webhook), (run) => {
    const body = `[${run.map((p) => p.json).join(',')}]`;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (credentials.hmacKey !== undefined && credentials.hmacKey !== '') headers[SIGNATURE_HEADER.toLowerCase()] = signature(credentials.hmacKey, body);
    return { url, method: 'POST', headers, body };
  });
}

/** Discord: one embed per message, up to 10 per request and 6,000 characters across them. */
function discordBatch(provider: ChatProvider, credentials: ProviderCredentials, messages: readonly Message[]): BatchRequest[] {
  const url = addressOf('discord', credentials);
  const parts = messages.map((m): Part => {
    const [embed] = discordBody(provider, m)['embeds'] as [{ title: string; description: string; fields: { name: string; value: string }[] }];
    const weight = embed.title.length + embed.description.length + embed.fields.reduce((sum, f) => sum + f.name.length + f.value.length, 0);
    return { json: JSON.stringify(embed), weight };
  });
  const head = open({ ...(provider.username === undefined ? {} : { username: provider.username }), allowed_mentions: { parse: [] } });
  return requests(parts, split(parts, BATCH_LIMITS.discord), (run) => ({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: `${head},"embeds":[${run.map((p) => p.json).join(',')}]}`,
  }));
}

/** Slack: one message of the messages' blocks, a divider between two; its text (the notification's) names the first and how many more. */
function slackBatch(provider: ChatProvider, credentials: ProviderCredentials, messages: readonly Message[]): BatchRequest[] {
  const destination = slackDestination(provider, credentials);
  const rendered = messages.map((m) => {
    const body = slackBody(provider, m) as { text: string; blocks: { text?: { text: string }; elements?: { text: string }[] }[] };
    const weight = body.blocks.reduce((sum, b) => sum + (b.text?.text.length ?? 0) + (b.elements ?? []).reduce((s, e) => s + e.text.length, 0), 0);
    return { text: body.text, part: { json: JSON.stringify(body.blocks).slice(1, -1), weight } };
  });
  const parts = rendered.map((r) => r.part);
  const texts = rendered.map((r) => r.text);
  let at = 0;
  return requests(parts, split(parts, BATCH_LIMITS.slack), (run, count) => {
    const first = texts[at] ?? '';
    at += count;
    const text = count === 1 ? first : `${first} (and ${count - 1} more)`;
    const head = open({
      ...(provider.channel === undefined ? {} : { channel: provider.channel }),
      ...(provider.username === undefined ? {} : { username: provider.username }),
      text,
    });
    return { ...destination, body: `${head},"blocks":[${run.map((p) => p.json).join(',{"type":"divider"},')}]}` };
  });
}

/** Teams: one Adaptive Card with a section (a Container, separated from the one before) per message, 27,000 bytes a request at most. */
function teamsBatch(credentials: ProviderCredentials, messages: readonly Message[]): BatchRequest[] {
  const url = addressOf('msteams', credentials);
  const parts = messages.map((m): Part => {
    const json = `{"type":"Container","separator":true,"items":${JSON.stringify(teamsItems(m))}}`;
    return { json, weight: Buffer.byteLength(json) + 1 };
  });
  const envelope = JSON.stringify(teamsMessage([]));
  const [before = '', after = ''] = envelope.split('"body":[]');
  return requests(parts, split(parts, BATCH_LIMITS.msteams, Buffer.byteLength(envelope)), (run) => ({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: `${before}"body":[${run.map((p) => p.json).join(',')}]${after}`,
  }));
}
