// The overview: a health banner, counts by kind and state (drifted counted apart: a drifted sync is also ready
// or failed), what needs attention, recent activity from the operator's Events, and the filtered list. Every
// filter is in the URL, so a view can be shared.
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import type { UiActivity, UiObject, UiState } from '../model.ts';
import { navigate, objectHref } from './store.ts';

export const KINDS = ['ConfigSync', 'ManifestSync', 'NamespaceReplication', 'RemoteCluster'] as const;
const STATES: UiState[] = ['ready', 'progressing', 'failed', 'suspended'];
/** The state filter's values: the four states, and drifted. */
const STATE_FILTERS = [...STATES, 'drifted'] as const;
const ACTIVITY_SHOWN = 15;
/** Rows drawn at once: the rest behind "show more" (a cluster with thousands of syncs stays fast). */
const ROWS_SHOWN = 200;

export function Badge({ state }: { state: UiState | 'drifted' }): ComponentChildren {
  return html`<span class=${`badge ${state}`}>${state}</span>`;
}

type Filter = { kind: string; namespace: string; state: string; label: string; text: string };

/** Words people type for a state (kubectl's READY column, condition reasons) → the filter's value. */
const STATE_ALIASES: Record<string, string> = {
  true: 'ready',
  healthy: 'ready',
  synced: 'ready',
  false: 'failed',
  notready: 'failed',
  stalled: 'failed',
  error: 'failed',
  degraded: 'failed',
  reconciling: 'progressing',
  pending: 'progressing',
  unknown: 'progressing',
  suspend: 'suspended',
  paused: 'suspended',
  drift: 'drifted',
  outofsync: 'drifted',
};

/** `?state=` as typed (any case, an alias) → one of the filter's values, or the text as given (then nothing matches and the page says why). */
export function stateFilter(typed: string): string {
  const lower = typed
    .trim()
    .toLowerCase()
    .replace(/[\s_-]/g, '');
  return (STATE_FILTERS as readonly string[]).includes(lower) ? lower : (STATE_ALIASES[lower] ?? typed);
}

/** `key=value` or `key` (present) against an object's labels. */
function hasLabel(o: UiObject, selector: string): boolean {
  const [key = '', ...value] = selector.split('=');
  const labels = o.labels ?? {};
  return value.length === 0 ? key in labels : labels[key] === value.join('=');
}

export function matches(o: UiObject, filter: Filter): boolean {
  if (filter.kind !== '' && o.kind !== filter.kind) return false;
  if (filter.namespace !== '' && o.namespace !== filter.namespace) return false;
  if (filter.state === 'drifted' ? !o.drifted : filter.state !== '' && o.state !== filter.state) return false;
  if (filter.label !== '' && !hasLabel(o, filter.label)) return false;
  const text = filter.text.toLowerCase();
  return text === '' || `${o.kind} ${o.namespace}/${o.name} ${o.summary}`.toLowerCase().includes(text);
}

export function Overview({
  objects,
  activity,
  url,
  connected,
}: {
  objects: UiObject[];
  activity: UiActivity[];
  url: URL;
  connected: boolean;
}): ComponentChildren {
  const q = url.searchParams;
  const filter: Filter = {
    kind: q.get('kind') ?? '',
    namespace: q.get('namespace') ?? '',
    state: stateFilter(q.get('state') ?? ''),
    label: q.get('label') ?? '',
    text: q.get('q') ?? '',
  };
  const unknownState = filter.state !== '' && !(STATE_FILTERS as readonly string[]).includes(filter.state);
  const setFilter = (key: string, value: string): void => {
    const next = new URL(url);
    if (value === '') next.searchParams.delete(key);
    else next.searchParams.set(key, value);
    next.searchParams.delete('all');
    navigate(next.pathname + next.search, true);
  };
  if (!connected && objects.length === 0) return html`<p class="empty">Loading…</p>`;
  const attention = objects.filter((o) => o.attention !== undefined).sort((a, b) => a.key.localeCompare(b.key));
  const failed = objects.filter((o) => o.state === 'failed').length;
  const namespaces = [...new Set(objects.map((o) => o.namespace))].sort();
  const shown = objects.filter((o) => matches(o, filter)).sort((a, b) => a.key.localeCompare(b.key));
  const limit = q.has('all') ? shown.length : ROWS_SHOWN;
  const count = (kind: string, state: string): number => objects.filter((o) => o.kind === kind && (state === 'drifted' ? o.drifted : o.state === state)).length;
  const stateHref = (kind: string, state: string): string => `/?kind=${kind}&state=${state}`;
  const select = (label: string, key: keyof Filter, param: string, options: readonly string[], every: string): ComponentChildren =>
    html`<select aria-label=${label} value=${filter[key]} onChange=${(e: Event) => setFilter(param, (e.target as HTMLSelectElement).value)}>
      <option value="">${every}</option>
      ${options.map((v) => html`<option value=${v}>${v}</option>`)}
    </select>`;
  return html` <section class=${`banner ${failed === 0 && attention.length === 0 ? 'ok' : 'bad'}`} role="status">
      ${attention.length === 0 ? `All ${objects.length} objects you may see are ready, progressing or suspended.` : `${attention.length} of ${objects.length} need attention (${failed} failed).`}
    </section>
    <section class="counts">
      <table>
        <thead>
          <tr>
            <th>Kind</th>
            ${STATE_FILTERS.map((s) => html`<th>${s}</th>`)}
          </tr>
        </thead>
        <tbody>
          ${KINDS.map(
            (k) =>
              html`<tr>
                <th scope="row"><a href=${`/?kind=${k}`}>${k}</a></th>
                ${STATE_FILTERS.map((s) => html`<td><a class=${count(k, s) > 0 ? `n ${s}` : 'n'} data-count=${`${k}/${s}`} href=${stateHref(k, s)}>${count(k, s)}</a></td>`)}
              </tr>`,
          )}
        </tbody>
      </table>
    </section>
    <div class="columns">
      ${
        attention.length > 0 &&
        html`<section class="attention">
          <h2>Needs attention</h2>
          <ul>
            ${attention.slice(0, 50).map((o) => html`<li data-attention=${o.key}><a href=${objectHref(o)}>${o.kind} ${o.namespace}/${o.name}</a><span class="msg">${o.attention}</span></li>`)}
          </ul>
          ${attention.length > 50 && html`<p class="hint">and ${attention.length - 50} more: <a href="/?state=failed">every failed one</a></p>`}
        </section>`
      }
      <${Activity} entries=${activity} />
    </div>
    <section class="filters" aria-label="Filters">
      ${select('Kind', 'kind', 'kind', KINDS, 'every kind')} ${select('Namespace', 'namespace', 'namespace', namespaces, 'every namespace')}
      ${select('State', 'state', 'state', STATE_FILTERS, 'every state')}
      <input
        type="search"
        aria-label="Label"
        class="label"
        placeholder="label key=value"
        value=${filter.label}
        onChange=${(e: Event) => setFilter('label', (e.target as HTMLInputElement).value.trim())}
      />
      <input
        type="search"
        aria-label="Search"
        placeholder="search name, namespace, message"
        value=${filter.text}
        onInput=${(e: Event) => setFilter('q', (e.target as HTMLInputElement).value)}
      />
    </section>
    <section class="list">
      ${unknownState && html`<p class="result bad" role="alert">No state "${filter.state}": the states are ${STATE_FILTERS.join(', ')}.</p>`}
      ${
        shown.length === 0
          ? html`<p class="empty">Nothing matches${filter.state === '' || unknownState ? '' : ` state ${filter.state}`}.</p>`
          : html`<ul class="rows">
                ${shown.slice(0, limit).map(
                  (o) =>
                    html`<li class="row" data-key=${o.key}>
                      <a href=${objectHref(o)}
                        ><span class="badges"><${Badge} state=${o.state} />${o.drifted && html`<${Badge} state="drifted" />`}</span
                        ><span class="kind">${o.kind}</span><span class="id">${o.namespace}/${o.name}</span><span class="msg">${o.summary}</span></a
                      >
                    </li>`,
                )}
              </ul>
              ${shown.length > limit && html`<p class="hint">${shown.length - limit} more: <a href=${`${url.pathname}${url.search === '' ? '?' : `${url.search}&`}all`}>show all</a>, or narrow the filters.</p>`}`
      }
    </section>`;
}

export function Activity({ entries, title = 'Recent activity' }: { entries: readonly UiActivity[]; title?: string }): ComponentChildren {
  const newest = entries.slice(-ACTIVITY_SHOWN).reverse();
  return html`<section class="activity">
    <h2>${title}</h2>
    ${
      newest.length === 0
        ? html`<p class="empty">No events recorded since the operator started.</p>`
        : html`<ul>
            ${newest.map((e) => html`<li class=${`event ${e.type === 'Warning' ? 'warning' : 'normal'}`}><time datetime=${e.at}>${e.at.slice(11, 19)}</time> <a href=${objectHref(e)}>${e.kind} ${e.namespace}/${e.name}</a> <span class="reason">${e.reason}</span><span class="msg">${e.message}</span></li>`)}
          </ul>`
    }
  </section>`;
}
