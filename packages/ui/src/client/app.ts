// The web UI's page: Preact components written with htm (tagged templates, so no JSX build step), fed by one
// Server-Sent Events stream (store.ts). Every view is a URL: filters live in the query string, an object's page
// at /objects/KIND/NAMESPACE/NAME.
import { html } from 'htm/preact';
import { h, render, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { UiObject } from '../model.ts';
import { Detail } from './detail.ts';
import { Mirrors } from './mirrors.ts';
import { KINDS, Overview } from './overview.ts';
import { getJson, useLocation, useStore, type Store } from './store.ts';

function App(): ComponentChildren {
  const store = useStore();
  const url = useLocation();
  const parts = url.pathname
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  const detail = parts[0] === 'objects' && parts.length === 4 ? store.objects.get(`${parts[1]}/${parts[2]}/${parts[3]}`) : undefined;
  return html` <header class="top">
      <a class="brand" href="/">Syncline</a>
      <nav>
        ${KINDS.map((k) => html`<a href=${`/?kind=${k}`} class=${url.searchParams.get('kind') === k ? 'active' : ''}>${k}s</a>`)}<a
          href="/mirrors"
          class=${parts[0] === 'mirrors' ? 'active' : ''}
          >Mirrors</a
        >
      </nav>
      <span class=${`live ${store.connected ? 'on' : 'off'}`} title=${store.connected ? 'live' : 'reconnecting'}>${store.connected ? 'live' : 'offline'}</span>
      <form method="post" action="/logout" class="user"><span>${store.username}</span><button type="submit">Sign out</button></form>
    </header>
    <main>
      ${
        parts[0] === 'mirrors'
          ? html`<${Mirrors} url=${url} />`
          : parts[0] === 'objects'
            ? detail === undefined
              ? html`<p class="empty">${store.connected ? `${parts.slice(1).join('/')} is not there, or you may not list it.` : 'Loading…'}</p>`
              : detail.brief === true
                ? html`<${Whole} object=${detail} put=${store.put} />`
                : html`<${Detail} object=${detail} csrf=${store.csrf} activity=${store.activity} />`
            : html`<${Overview} objects=${[...store.objects.values()]} activity=${store.activity} url=${url} connected=${store.connected} />`
      }
    </main>`;
}

/** The snapshot holds the overview's part of each object: its page asks for the rest once. */
function Whole({ object, put }: { object: UiObject; put: Store['put'] }): ComponentChildren {
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    void getJson<UiObject>(`/api/objects/${object.kind}/${encodeURIComponent(object.namespace)}/${encodeURIComponent(object.name)}`).then((r) =>
      r.ok ? put(r.value) : setError(r.error),
    );
  }, [object.key]);
  return html`<p class=${error === undefined ? 'empty' : 'result bad'}>${error ?? `Loading ${object.kind} ${object.namespace}/${object.name}…`}</p>`;
}

const root = document.getElementById('app');
if (root !== null) {
  root.className = '';
  root.textContent = '';
  render(h(App, null), root);
}
