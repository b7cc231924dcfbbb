// The web UI's page: Preact components written with htm (tagged templates, so no JSX build step), fed by one
// Server-Sent Events stream (/api/events: a snapshot, then upserts and deletes). Every view is a URL: filters
// live in the query string, an object's page at /objects/KIND/NAMESPACE/NAME.
import { html } from 'htm/preact';
import { h, render, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { UiObject, UiState } from '../model.ts';

const KINDS = ['ConfigSync', 'ManifestSync', 'NamespaceReplication', 'RemoteCluster'] as const;
const STATES: UiState[] = ['ready', 'progressing', 'failed', 'suspended'];
/** Conditions for which True is bad news (the rest read True = good). */
const ABNORMAL = new Set(['Stalled', 'InvalidSource', 'Failed', 'IntervalClamped']);
const conditionClass = (type: string, status: string): string => (status === 'Unknown' ? 'unknown' : (status === 'True') !== ABNORMAL.has(type) ? 'good' : 'bad');

type Store = { objects: Map<string, UiObject>; username: string; csrf: string; connected: boolean; version: number };

function useStore(): Store {
  const [store, setStore] = useState<Store>({ objects: new Map(), username: '', csrf: '', connected: false, version: 0 });
  useEffect(() => {
    const events = new EventSource('/api/events');
    const update = (change: (s: Store) => Partial<Store>): void => setStore((s) => ({ ...s, ...change(s), version: s.version + 1 }));
    events.addEventListener('snapshot', (e) => {
      const data = JSON.parse((e as MessageEvent<string>).data) as { username: string; csrf: string; objects: UiObject[] };
      update(() => ({ objects: new Map(data.objects.map((o) => [o.key, o])), username: data.username, csrf: data.csrf, connected: true }));
    });
    events.addEventListener('upsert', (e) => {
      const object = JSON.parse((e as MessageEvent<string>).data) as UiObject;
      update((s) => ({ objects: new Map(s.objects).set(object.key, object) }));
    });
    events.addEventListener('delete', (e) => {
      const { key } = JSON.parse((e as MessageEvent<string>).data) as { key: string };
      update((s) => {
        const objects = new Map(s.objects);
        objects.delete(key);
        return { objects };
      });
    });
    events.onerror = () => {
      update(() => ({ connected: false }));
      // Signed out or the session expired: back to the sign-in page. Otherwise EventSource reconnects itself.
      void fetch('/api/me').then((r) => {
        if (r.status === 401) location.assign('/login');
      });
    };
    return () => events.close();
  }, []);
  return store;
}

function useLocation(): URL {
  const [url, setUrl] = useState(new URL(location.href));
  useEffect(() => {
    const onPop = (): void => setUrl(new URL(location.href));
    addEventListener('popstate', onPop);
    // Same-origin links navigate in the page (the stream stays open).
    const onClick = (e: MouseEvent): void => {
      const a = (e.target as Element | null)?.closest('a');
      if (a === null || a === undefined || a.origin !== location.origin || e.metaKey || e.ctrlKey || e.shiftKey || a.target !== '') return;
      e.preventDefault();
      navigate(a.href);
    };
    document.addEventListener('click', onClick);
    return () => {
      removeEventListener('popstate', onPop);
      document.removeEventListener('click', onClick);
    };
  }, []);
  return url;
}

function navigate(href: string, replace = false): void {
  if (replace) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  dispatchEvent(new PopStateEvent('popstate'));
}

function App(): ComponentChildren {
  const store = useStore();
  const url = useLocation();
  const parts = url.pathname.split('/').filter((p) => p !== '').map(decodeURIComponent);
  const detail = parts[0] === 'objects' && parts.length === 4 ? store.objects.get(`${parts[1]}/${parts[2]}/${parts[3]}`) : undefined;
  return html`
    <header class="top">
      <a class="brand" href="/">Syncline</a>
      <nav>${KINDS.map((k) => html`<a href=${`/?kind=${k}`} class=${url.searchParams.get('kind') === k ? 'active' : ''}>${k}s</a>`)}</nav>
      <span class=${`live ${store.connected ? 'on' : 'off'}`} title=${store.connected ? 'live' : 'reconnecting'}>${store.connected ? 'live' : 'offline'}</span>
      <form method="post" action="/logout" class="user"><span>${store.username}</span><button type="submit">Sign out</button></form>
    </header>
    <main>
      ${parts[0] === 'objects'
        ? detail === undefined
          ? html`<p class="empty">${store.connected ? `${parts.slice(1).join('/')} is not there, or you may not list it.` : 'Loading…'}</p>`
          : html`<${Detail} object=${detail} csrf=${store.csrf} />`
        : html`<${Overview} objects=${[...store.objects.values()]} url=${url} connected=${store.connected} />`}
    </main>`;
}

function Badge({ state }: { state: UiState }): ComponentChildren {
  return html`<span class=${`badge ${state}`}>${state}</span>`;
}

const objectHref = (o: UiObject): string => `/objects/${o.kind}/${encodeURIComponent(o.namespace)}/${encodeURIComponent(o.name)}`;

function Overview({ objects, url, connected }: { objects: UiObject[]; url: URL; connected: boolean }): ComponentChildren {
  const q = url.searchParams;
  const filter = { kind: q.get('kind') ?? '', namespace: q.get('namespace') ?? '', state: q.get('state') ?? '', text: q.get('q') ?? '' };
  const setFilter = (key: string, value: string): void => {
    const next = new URL(url);
    if (value === '') next.searchParams.delete(key);
    else next.searchParams.set(key, value);
    navigate(next.pathname + next.search, true);
  };
  const attention = objects.filter((o) => o.state === 'failed');
  const namespaces = [...new Set(objects.map((o) => o.namespace))].sort();
  const text = filter.text.toLowerCase();
  const shown = objects
    .filter((o) => (filter.kind === '' || o.kind === filter.kind) && (filter.namespace === '' || o.namespace === filter.namespace) && (filter.state === '' || o.state === filter.state))
    .filter((o) => text === '' || `${o.kind} ${o.namespace}/${o.name} ${o.summary}`.toLowerCase().includes(text))
    .sort((a, b) => a.key.localeCompare(b.key));
  const count = (kind: string, state: string): number => objects.filter((o) => o.kind === kind && o.state === state).length;
  const stateHref = (kind: string, state: string): string => `/?kind=${kind}&state=${state}`;
  if (!connected && objects.length === 0) return html`<p class="empty">Loading…</p>`;
  return html`
    <section class=${`banner ${attention.length === 0 ? 'ok' : 'bad'}`} role="status">
      ${attention.length === 0 ? `All ${objects.length} objects you may see are ready, progressing or suspended.` : `${attention.length} of ${objects.length} need attention.`}
    </section>
    <section class="counts">
      <table><thead><tr><th>Kind</th>${STATES.map((s) => html`<th>${s}</th>`)}</tr></thead>
      <tbody>${KINDS.map((k) => html`<tr><th scope="row"><a href=${`/?kind=${k}`}>${k}</a></th>${STATES.map((s) => html`<td><a class=${count(k, s) > 0 ? `n ${s}` : 'n'} href=${stateHref(k, s)}>${count(k, s)}</a></td>`)}</tr>`)}</tbody></table>
    </section>
    ${attention.length > 0 &&
    html`<section class="attention"><h2>Needs attention</h2><ul>${attention.map((o) => html`<li><a href=${objectHref(o)}>${o.kind} ${o.namespace}/${o.name}</a><span class="msg">${o.summary}</span></li>`)}</ul></section>`}
    <section class="filters" aria-label="Filters">
      <select aria-label="Kind" value=${filter.kind} onChange=${(e: Event) => setFilter('kind', (e.target as HTMLSelectElement).value)}>
        <option value="">every kind</option>${KINDS.map((k) => html`<option value=${k}>${k}</option>`)}
      </select>
      <select aria-label="Namespace" value=${filter.namespace} onChange=${(e: Event) => setFilter('namespace', (e.target as HTMLSelectElement).value)}>
        <option value="">every namespace</option>${namespaces.map((n) => html`<option value=${n}>${n}</option>`)}
      </select>
      <select aria-label="State" value=${filter.state} onChange=${(e: Event) => setFilter('state', (e.target as HTMLSelectElement).value)}>
        <option value="">every state</option>${STATES.map((s) => html`<option value=${s}>${s}</option>`)}
      </select>
      <input type="search" aria-label="Search" placeholder="search name, namespace, message" value=${filter.text} onInput=${(e: Event) => setFilter('q', (e.target as HTMLInputElement).value)} />
    </section>
    <section class="list">
      ${shown.length === 0
        ? html`<p class="empty">Nothing matches.</p>`
        : html`<ul class="rows">${shown.map((o) => html`<li class="row" data-key=${o.key}><a href=${objectHref(o)}><${Badge} state=${o.state} /><span class="kind">${o.kind}</span><span class="id">${o.namespace}/${o.name}</span><span class="msg">${o.summary}</span></a></li>`)}</ul>`}
    </section>`;
}

function Detail({ object: o, csrf }: { object: UiObject; csrf: string }): ComponentChildren {
  const [result, setResult] = useState<{ ok: boolean; text: string } | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const run = async (action: string, revision?: string): Promise<void> => {
    setBusy(true);
    try {
      const response = await fetch('/api/actions', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf }, body: JSON.stringify({ kind: o.kind, namespace: o.namespace, name: o.name, action, revision }) });
      const body = (await response.json().catch(() => ({}))) as { message?: string; error?: string };
      setResult({ ok: response.ok, text: response.ok ? (body.message ?? 'done') : `${response.status}: ${body.error ?? response.statusText}` });
    } catch (error) {
      setResult({ ok: false, text: String(error) });
    } finally {
      setBusy(false);
    }
  };
  const entries = (record: Record<string, unknown>): [string, unknown][] => Object.entries(record).filter(([, v]) => v !== undefined && v !== '');
  return html`
    <article class="detail">
      <p class="crumbs"><a href=${`/?kind=${o.kind}`}>${o.kind}s</a> / <a href=${`/?namespace=${encodeURIComponent(o.namespace)}`}>${o.namespace}</a></p>
      <h1><${Badge} state=${o.state} /> ${o.name}</h1>
      <p class="summary">${o.summary}</p>
      <div class="actions">
        ${o.kind !== 'RemoteCluster' && (o.suspended ? html`<button disabled=${busy} onClick=${() => void run('resume')}>Resume</button>` : html`<button disabled=${busy} onClick=${() => void run('suspend')}>Suspend</button>`)}
        <button disabled=${busy || o.suspended} onClick=${() => void run('reconcile')}>Reconcile now</button>
        ${o.kind === 'NamespaceReplication' && (o.facts['failover'] === 'true' ? html`<button disabled=${busy} onClick=${() => void run('failback')}>Fail back</button>` : html`<button disabled=${busy} onClick=${() => void run('failover')}>Fail over</button>`)}
        ${result !== undefined && html`<span class=${`result ${result.ok ? 'ok' : 'bad'}`} role="alert">${result.text}</span>`}
      </div>
      ${Object.keys(o.source).length > 0 && html`<section><h2>Source</h2><dl>${entries(o.source).map(([k, v]) => html`<dt>${k}</dt><dd><code>${String(v)}</code></dd>`)}</dl></section>`}
      <section><h2>Conditions</h2>
        ${o.conditions.length === 0 ? html`<p class="empty">No status yet.</p>` : html`<ul class="conditions">${o.conditions.map((c) => html`<li class=${`cond ${conditionClass(c.type, c.status)}`}><strong>${c.type}</strong> ${c.status} <span class="reason">${c.reason}</span> <time>${c.lastTransitionTime ?? ''}</time>${c.message !== '' && html`<pre class="message">${c.message}</pre>`}</li>`)}</ul>`}
      </section>
      ${o.targets.length > 0 && html`<section><h2>${o.kind === 'NamespaceReplication' ? 'Kinds replicated' : 'Targets'}</h2><div class="scroll"><table><thead><tr><th>Name</th><th>Cluster</th><th>Namespace</th><th>Phase</th><th>Objects</th><th>Health</th><th>Message</th></tr></thead>
        <tbody>${o.targets.map((t) => html`<tr><td>${t.name}</td><td>${t.cluster ?? 'this cluster'}</td><td>${t.namespace ?? ''}</td><td>${t.phase ?? ''}</td><td>${t.objects ?? ''}</td><td>${t.health ?? ''}</td><td class="msg">${t.message ?? ''}</td></tr>`)}</tbody></table></div></section>`}
      ${o.history.length > 0 && html`<section><h2>Deploy history</h2><div class="scroll"><table><thead><tr><th>Revision</th><th>Applied</th><th>Objects</th><th>Digest</th><th></th></tr></thead>
        <tbody>${o.history.map((d) => html`<tr><td><code>${d.revision.slice(0, 12)}</code></td><td><time>${d.appliedAt ?? ''}</time></td><td>${d.objects ?? ''}</td><td><code>${(d.digest ?? '').slice(0, 12)}</code></td><td>${d.revision !== o.source['revision'] && html`<button class="rollback" data-revision=${d.revision} disabled=${busy} onClick=${() => void run('rollback', d.revision)}>Roll back</button>`}</td></tr>`)}</tbody></table></div></section>`}
      ${Object.keys(o.facts).length > 0 && html`<section><h2>Facts</h2><dl>${entries(o.facts).map(([k, v]) => html`<dt>${k}</dt><dd>${String(v)}</dd>`)}</dl></section>`}
    </article>`;
}

const root = document.getElementById('app');
if (root !== null) {
  root.className = '';
  root.textContent = '';
  render(h(App, null), root);
}
