// Request bodies and headers of the chat and webhook NotificationProviders, as their receivers document them. Pure: the
// delivery sends what these return. Limits are the receivers' own (Slack's 3,000-character section text,
// Discord's 256-character title and 4,096-character description); longer text is cut with an ellipsis.
import { createHmac } from 'node:crypto';
import type { MessageTemplate } from '@syncline/render';
import type { ProviderType } from '@syncline/api';
import type { NotificationEvent } from './event.ts';

/** One HTTP request to a receiver. `url` and headers may hold credentials: never logged. */
export type OutgoingRequest = { readonly url: string; readonly method: 'POST'; readonly headers: Readonly<Record<string, string>>; readonly body: string };

/** What a NotificationProvider needs from its Secret (and spec.address): each may be absent. */
export type ProviderCredentials = {
  readonly address?: string;
  readonly token?: string;
  readonly hmacKey?: string;
  readonly username?: string;
  readonly password?: string;
};

export type ChatProvider = {
  readonly type: Exclude<ProviderType, 'github' | 'gitlab' | 'gitea' | 'forgejo' | 'bitbucket'>;
  readonly channel?: string | undefined;
  readonly username?: string | undefined;
  readonly template?: MessageTemplate | undefined;
  readonly contentType?: string | undefined;
};

/** A notification as every chat NotificationProvider words it. */
export type Message = {
  readonly event: NotificationEvent;
  /** The NotificationAlert that sent it (`namespace/name`). */
  readonly alert: string;
  readonly summary?: string | undefined;
};

export const SLACK_POST_MESSAGE_URL = 'https://slack.com/api/chat.postMessage';
/** The signature header of the webhook type: `sha256=` and the hex HMAC-SHA256 of the body with the Secret's hmacKey. */
export const SIGNATURE_HEADER = 'X-Syncline-Signature';

export function title(event: NotificationEvent): string {
  const state = event.recovered
    ? 'Recovered'
    : event.severity === 'error'
      ? 'Failed'
      : event.category === 'DriftCorrected'
        ? 'Drift corrected'
        : event.category === 'Failover'
          ? 'Failover'
          : 'Applied';
  return `${state}: ${event.kind} ${event.namespace}/${event.name} (${event.reason})`;
}

function facts(message: Message): { name: string; value: string }[] {
  const { event } = message;
  return [
    { name: 'Object', value: `${event.kind} ${event.namespace}/${event.name}` },
    { name: 'Reason', value: event.reason },
    ...(event.revision === undefined ? [] : [{ name: 'Revision', value: event.revision }]),
    ...(message.summary === undefined ? [] : [{ name: 'Summary', value: message.summary }]),
  ];
}

export function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The request that delivers `message` through a chat or webhook NotificationProvider. Throws when a credential it needs is missing. */
export function chatRequest(provider: ChatProvider, credentials: ProviderCredentials, message: Message): OutgoingRequest {
  switch (provider.type) {
    case 'slack':
      return slackRequest(provider, credentials, message);
    case 'msteams':
    case 'discord':
      return json(addressOf(provider.type, credentials), provider.type === 'msteams' ? teamsBody(message) : discordBody(provider, message));
    case 'webhook':
      return webhookRequest(provider, credentials, message);
  }
}

/** The URL of an msteams, discord or webhook NotificationProvider. Throws when there is none. */
export function addressOf(type: 'msteams' | 'discord' | 'webhook', credentials: ProviderCredentials): string {
  const what = {
    msteams: "msteams needs the Workflows webhook URL (the Secret's address key, or spec.address)",
    discord: "discord needs the webhook URL (the Secret's address key, or spec.address)",
    webhook: "webhook needs a URL (the Secret's address key, or spec.address)",
  }[type];
  return need(credentials.address, what);
}

function need(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new Error(what);
  return value;
}

function json(url: string, body: unknown, headers: Record<string, string> = {}): OutgoingRequest {
  return { url, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) };
}

/** Slack mrkdwn: &, < and > are control characters and must be escaped. */
const slackEscape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * Slack: an incoming webhook (the Secret's address) takes `text` and `blocks`; chat.postMessage with a bot token
 * (Authorization: Bearer) takes the same and a channel, and answers 200 with `ok: false` on errors (checked by
 * the delivery).
 */
export function slackBody(provider: Pick<ChatProvider, 'channel' | 'username'>, message: Message): Record<string, unknown> {
  const { event } = message;
  const heading = title(event);
  const text = cut(slackEscape(event.message), 2900);
  return {
    ...(provider.channel === undefined ? {} : { channel: provider.channel }),
    ...(provider.username === undefined ? {} : { username: provider.username }),
    text: cut(`${heading}: ${event.message}`, 3000),
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: cut(heading, 150) } },
      { type: 'section', text: { type: 'mrkdwn', text } },
      { type: 'context', elements: facts(message).map((f) => ({ type: 'mrkdwn', text: cut(`*${f.name}:* ${slackEscape(f.value)}`, 2000) })) },
    ],
  };
}

function slackRequest(provider: ChatProvider, credentials: ProviderCredentials, message: Message): OutgoingRequest {
  return { ...slackDestination(provider, credentials), body: JSON.stringify(slackBody(provider, message)) };
}

/** Where a Slack message goes: chat.postMessage with the bot token, or the incoming webhook. */
export function slackDestination(provider: Pick<ChatProvider, 'channel'>, credentials: ProviderCredentials): Omit<OutgoingRequest, 'body'> {
  if (credentials.token !== undefined && credentials.token !== '') {
    need(provider.channel, 'slack with a token (chat.postMessage) needs spec.channel');
    return {
      url: credentials.address ?? SLACK_POST_MESSAGE_URL,
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', authorization: `Bearer ${credentials.token}` },
    };
  }
  const url = need(credentials.address, "slack needs an incoming webhook URL (the Secret's address key) or a bot token (token key) and spec.channel");
  return { url, method: 'POST', headers: { 'content-type': 'application/json' } };
}

/** Microsoft Teams Workflows ("Post to a channel when a webhook request is received"): a message with one Adaptive Card. */
export function teamsBody(message: Message): Record<string, unknown> {
  return teamsMessage(teamsItems(message));
}

/** A Teams message of one Adaptive Card whose body is `items`. */
export function teamsMessage(items: readonly unknown[]): Record<string, unknown> {
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: { $schema: 'http://adaptivecards.io/schemas/adaptive-card.json', type: 'AdaptiveCard', version: '1.4', body: items },
      },
    ],
  };
}

/** One message as Adaptive Card elements: its title, its text and its facts. */
export function teamsItems(message: Message): Record<string, unknown>[] {
  const { event } = message;
  return [
    { type: 'TextBlock', text: title(event), weight: 'Bolder', size: 'Medium', wrap: true, color: event.severity === 'error' ? 'Attention' : 'Good' },
    { type: 'TextBlock', text: cut(event.message, 4000), wrap: true },
    { type: 'FactSet', facts: facts(message).map((f) => ({ title: f.name, value: f.value })) },
  ];
}

const DISCORD_RED = 0xd73a49;
const DISCORD_GREEN = 0x28a745;

/** Discord's execute-webhook body: one embed; mentions parsed from the text are turned off. */
export function discordBody(provider: Pick<ChatProvider, 'username'>, message: Message): Record<string, unknown> {
  const { event } = message;
  return {
    ...(provider.username === undefined ? {} : { username: provider.username }),
    allowed_mentions: { parse: [] },
    embeds: [
      {
        title: cut(title(event), 256),
        description: cut(event.message, 4096),
        color: event.severity === 'error' ? DISCORD_RED : DISCORD_GREEN,
        fields: facts(message).map((f) => ({ name: cut(f.name, 256), value: cut(f.value, 1024), inline: true })),
        timestamp: event.timestamp,
      },
    ],
  };
}

/** The webhook type's JSON body: the event as it is, plus the NotificationAlert and its summary. */
export function webhookBody(message: Message): Record<string, unknown> {
  return { ...message.event, alert: message.alert, ...(message.summary === undefined ? {} : { summary: message.summary }) };
}

function webhookRequest(provider: ChatProvider, credentials: ProviderCredentials, message: Message): OutgoingRequest {
  const url = addressOf('webhook', credentials);
  const body = provider.template === undefined ? JSON.stringify(webhookBody(message)) : provider.template(webhookBody(message));
  const headers: Record<string, string> = {
    'content-type': provider.template === undefined ? 'application/json' : (provider.contentType ?? 'application/json'),
  };
  if (credentials.hmacKey !== undefined && credentials.hmacKey !== '') headers[SIGNATURE_HEADER.toLowerCase()] = signature(credentials.hmacKey, body);
  return { url, method: 'POST', headers, body };
}

/** `sha256=<hex>`: what a receiver recomputes over the raw body with the shared key, and compares in constant time. */
export function signature(key: string, body: string): string {
  return `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
}
