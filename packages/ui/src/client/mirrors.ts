// Label-driven mirroring: each source's copies (target namespace, state, and with whom a copy conflicts), from
// the operator's memory; refreshed every few seconds while the page is open (it costs the API server nothing).
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { UiMirrorRow } from '../model.ts';
import { getJson, navigate } from './store.ts';

const REFRESH_MS = 5_000;
const BAD = new Set(['conflict', 'failed', 'invalid', 'not-allowed', 'missing']);

export function Mirrors({ url }: { url: URL }): ComponentChildren {
  const [state, setState] = useState<{ enabled?: boolean; rows?: UiMirrorRow[]; error?: string }>({});
  useEffect(() => {
    const load = (): void => void getJson<{ enabled: boolean; rows: UiMirrorRow[] }>('/api/mirrors').then((r) => setState(r.ok ? r.value : { error: r.error }));
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  const text = (url.searchParams.get('q') ?? '').toLowerCase();
  const rows = (state.rows ?? []).filter(
    (r) => text === '' || `${r.kind} ${r.source} ${r.namespace} ${r.state} ${r.message ?? ''}`.toLowerCase().includes(text),
  );
  const sources = [...new Set(rows.map((r) => `${r.kind} ${r.source}`))];
  if (state.error !== undefined) return html`<p class="result bad" role="alert">${state.error}</p>`;
  if (state.rows === undefined) return html`<p class="empty">Loading…</p>`;
  if (state.enabled === false) return html`<p class="empty">Label-driven mirroring is off in this operator (--mirror off, or a named shard).</p>`;
  return html`<section class="mirrors">
    <h1>Mirrors</h1>
    <p class="hint">Secrets and ConfigMaps labelled as mirroring sources, and where their copies are. Names and states only; no data.</p>
    <section class="filters">
      <input
        type="search"
        aria-label="Search"
        placeholder="search source, namespace, state"
        value=${url.searchParams.get('q') ?? ''}
        onInput=${(e: Event) => {
          const next = new URL(url);
          const value = (e.target as HTMLInputElement).value;
          if (value === '') next.searchParams.delete('q');
          else next.searchParams.set('q', value);
          navigate(next.pathname + next.search, true);
        }}
      />
    </section>
    ${
      sources.length === 0
        ? html`<p class="empty">No mirroring sources you may list.</p>`
        : sources.map(
            (source) =>
              html`<h3>${source}</h3>
                <div class="scroll">
                  <table>
                    <thead>
                      <tr>
                        <th>Copy in</th>
                        <th>State</th>
                        <th>Message</th>
                      </tr>
                    </thead>
                    <tbody>
                      ${rows
                        .filter((r) => `${r.kind} ${r.source}` === source)
                        .map(
                          (r) =>
                            html`<tr class=${BAD.has(r.state) ? 'bad' : ''} data-mirror=${`${r.kind}/${r.source}/${r.namespace}`}>
                              <td>${r.namespace === '' ? '(the source)' : r.namespace}</td>
                              <td>${r.state}</td>
                              <td class="msg">${r.message ?? ''}</td>
                            </tr>`,
                        )}
                    </tbody>
                  </table>
                </div>`,
          )
    }
  </section>`;
}
