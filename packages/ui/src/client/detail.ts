// One object's page: state, actions, source, conditions (a render error's message names file:line:column),
// targets or copies, and per kind: a ConfigSync's applied objects against Git (health and drift, the live diff
// `syncline diff` shows) and its deploy history with the diff between any two deploys; a RemoteCluster's
// reachability; a NamespaceReplication's per-kind counts, lag and failover state.
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { UiActivity, UiCommit, UiDeployDiff, UiObject, UiSyncDiff, UiTree, UiTreeHook, UiTreeNode } from '../model.ts';
import { Activity, Badge } from './overview.ts';
import { getJson } from './store.ts';

/** Conditions for which True is bad news (the rest read True = good). */
const ABNORMAL = new Set(['Stalled', 'InvalidSource', 'Failed', 'IntervalClamped', 'Fenced', 'PruneHeld']);
const conditionClass = (type: string, status: string): string =>
  status === 'Unknown' ? 'unknown' : (status === 'True') !== ABNORMAL.has(type) ? 'good' : 'bad';
/** A unified diff with its added and removed lines marked (colour and a sign, so it reads without colour too). */
function DiffText({ text }: { text: string }): ComponentChildren {
  const lines = text.replace(/\n$/, '').split('\n');
  return html`<pre class="diff">
${lines.map((line) => html`<span class=${line.startsWith('@@') ? 'hunk' : line.startsWith('+') && !line.startsWith('+++') ? 'add' : line.startsWith('-') && !line.startsWith('---') ? 'del' : ''}>${`${line}\n`}</span>`)}</pre>`;
}

/**
 * The error the page leads with (the summary of a failed object, else what needs attention): every other place
 * that would repeat it (a condition, the only target, the diff against Git) says "above" instead, so one
 * error is shown once. With several targets or copies each row keeps its own message: the row says which.
 */
export function leadingError(o: Pick<UiObject, 'state' | 'summary' | 'attention'>): string | undefined {
  return o.state === 'failed' ? o.summary : o.attention;
}

/** Does `text` repeat `shown` (the same words, or one holding the other, as a wrapped error does)? */
export function repeats(text: string | undefined, shown: string | undefined): boolean {
  const a = (text ?? '').trim();
  const b = (shown ?? '').trim();
  return a !== '' && b !== '' && (a === b || a.includes(b) || b.includes(a));
}

const ABOVE = html`<span class="hint above">(the error above)</span>`;

const entries = (record: Record<string, unknown>): [string, unknown][] => Object.entries(record).filter(([, v]) => v !== undefined && v !== '');

type Run = (action: string, revision?: string) => Promise<void>;

export function Detail({ object: o, csrf, activity }: { object: UiObject; csrf: string; activity: UiActivity[] }): ComponentChildren {
  const [result, setResult] = useState<{ ok: boolean; text: string } | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const run: Run = async (action, revision) => {
    setBusy(true);
    try {
      const response = await fetch('/api/actions', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
        body: JSON.stringify({ kind: o.kind, namespace: o.namespace, name: o.name, action, revision }),
      });
      const body = (await response.json().catch(() => ({}))) as { message?: string; error?: string };
      setResult({ ok: response.ok, text: response.ok ? (body.message ?? 'done') : `${response.status}: ${body.error ?? response.statusText}` });
    } catch (error) {
      setResult({ ok: false, text: String(error) });
    } finally {
      setBusy(false);
    }
  };
  const mine = activity.filter((e) => e.kind === o.kind && e.namespace === o.namespace && e.name === o.name);
  const lead = leadingError(o);
  return html` <article class="detail">
    <p class="crumbs"><a href=${`/?kind=${o.kind}`}>${o.kind}s</a> / <a href=${`/?namespace=${encodeURIComponent(o.namespace)}`}>${o.namespace}</a></p>
    <h1><${Badge} state=${o.state} />${o.drifted && html`<${Badge} state="drifted" />`} ${o.name}</h1>
    <p class=${`summary${o.state === 'failed' ? ' error' : ''}`} role=${o.state === 'failed' ? 'alert' : undefined}>${o.summary}</p>
    ${o.attention !== undefined && !repeats(o.attention, o.summary) && html`<p class="attention-line" role="status">${o.attention}</p>`}
    <div class="actions">
      ${o.kind !== 'RemoteCluster' && (o.suspended ? html`<button disabled=${busy} onClick=${() => void run('resume')}>Resume</button>` : html`<button disabled=${busy} onClick=${() => void run('suspend')}>Suspend</button>`)}
      <button disabled=${busy || o.suspended} onClick=${() => void run('reconcile')}>Reconcile now</button>
      ${o.kind === 'NamespaceReplication' && (o.facts['failover'] === 'true' ? html`<button disabled=${busy} onClick=${() => void run('failback')}>Fail back</button>` : html`<button disabled=${busy} onClick=${() => void run('failover')}>Fail over</button>`)}
      ${result !== undefined && html`<span class=${`result ${result.ok ? 'ok' : 'bad'}`} role="alert">${result.text}</span>`}
    </div>
    ${
      Object.keys(o.source).length > 0 &&
      html`<section>
        <h2>Source</h2>
        <dl>
          ${entries(o.source).map(
            ([k, v]) =>
              html`<dt>${k}</dt>
                <dd><code>${String(v)}</code></dd>`,
          )}
        </dl>
      </section>`
    }
    <section>
      <h2>Conditions</h2>
      ${
        o.conditions.length === 0
          ? html`<p class="empty">No status yet.</p>`
          : html`<ul class="conditions">
              ${o.conditions.map((c) => html`<li class=${`cond ${conditionClass(c.type, c.status)}`}><strong>${c.type}</strong> ${c.status} <span class="reason">${c.reason}</span> <time>${c.lastTransitionTime ?? ''}</time>${c.message !== '' && (repeats(c.message, lead) ? ABOVE : html`<pre class="message">${c.message}</pre>`)}</li>`)}
            </ul>`
      }
    </section>
    ${o.kind === 'RemoteCluster' && html`<${Facts} title="Reachability" facts=${o.facts} />`}
    ${o.kind === 'NamespaceReplication' && html`<${Replication} object=${o} />`}
    ${o.targets.length > 0 && o.kind !== 'NamespaceReplication' && html`<${Targets} object=${o} lead=${lead} />`}
    ${o.kind === 'ConfigSync' && html`<${ResourceTree} object=${o} />`} ${o.kind === 'ConfigSync' && html`<${SyncObjects} object=${o} lead=${lead} />`}
    ${o.history.length > 0 && html`<${History} object=${o} busy=${busy} run=${run} />`}
    ${o.kind !== 'RemoteCluster' && o.kind !== 'NamespaceReplication' && Object.keys(o.facts).length > 0 && html`<${Facts} title="Facts" facts=${o.facts} />`}
    <${Activity} entries=${mine} title="Events" />
  </article>`;
}

function Facts({ title, facts }: { title: string; facts: Record<string, string> }): ComponentChildren {
  return html`<section class="facts">
    <h2>${title}</h2>
    <dl>
      ${entries(facts).map(
        ([k, v]) =>
          html`<dt>${k}</dt>
            <dd>${String(v)}</dd>`,
      )}
    </dl>
  </section>`;
}

function Targets({ object: o, lead }: { object: UiObject; lead: string | undefined }): ComponentChildren {
  const copies = o.kind === 'ManifestSync';
  return html`<section class="targets">
    <h2>${copies ? 'Copies' : 'Targets'}</h2>
    <div class="scroll">
      <table>
        <thead>
          <tr>
            ${copies ? '' : html`<th>Name</th>`}
            <th>Cluster</th>
            <th>Namespace</th>
            <th>${copies ? 'In sync' : 'Phase'}</th>
            <th>Objects</th>
            ${copies ? html`<th>Last synced</th>` : html`<th>Health</th>`}
            <th>Message</th>
          </tr>
        </thead>
        <tbody>
          ${o.targets.map(
            (t) =>
              html`<tr class=${t.phase === 'Failed' ? 'bad' : ''}>
                ${copies ? '' : html`<td>${t.name}</td>`}
                <td>${t.cluster ?? 'this cluster'}</td>
                <td>${t.namespace ?? ''}</td>
                <td>${copies ? (t.phase === 'Synced' ? 'yes' : (t.phase ?? '')) : (t.phase ?? '')}</td>
                <td>${t.objects ?? ''}</td>
                <td>${copies ? html`<time>${t.lastSyncedTime ?? ''}</time>` : (t.health ?? '')}</td>
                <td class="msg">
                  ${o.targets.length === 1 && repeats(t.message, lead) ? ABOVE : [t.reason, t.message].filter((m) => m !== undefined).join(': ')}
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </section>`;
}

/** Lag as the page sees it: none while Ready; otherwise since Ready last turned False (the recovery point). */
function lagOf(o: UiObject, now: number): string {
  const ready = o.conditions.find((c) => c.type === 'Ready');
  if (o.facts['failover'] === 'true') return 'failed over: not replicating';
  if (ready?.status === 'True')
    return o.facts['mode'] === 'Interval' ? `at most ${o.facts['interval'] ?? 'one interval'} (Interval mode)` : 'none (continuous, Ready)';
  if (ready?.lastTransitionTime === undefined) return 'unknown';
  const seconds = Math.max(0, Math.round((now - Date.parse(ready.lastTransitionTime)) / 1000));
  return `${seconds < 120 ? `${seconds}s` : `${Math.round(seconds / 60)}m`} (not Ready since ${ready.lastTransitionTime})`;
}

function Replication({ object: o }: { object: UiObject }): ComponentChildren {
  const failedOver = o.conditions.find((c) => c.type === 'FailedOver')?.status === 'True' || o.facts['failover'] === 'true';
  const total = o.targets.reduce((n, t) => n + (t.objects ?? 0), 0);
  return html`<section class="replication">
    <h2>Standby</h2>
    <dl>
      <dt>failover state</dt>
      <dd class=${failedOver ? 'bad' : ''}>
        ${failedOver ? `failed over${o.facts['failedOverAt'] === undefined ? '' : ` at ${o.facts['failedOverAt']}`}` : 'replicating to the standby'}
      </dd>
      <dt>lag / RPO</dt>
      <dd data-lag>${lagOf(o, Date.now())}</dd>
      ${entries(o.facts)
        .filter(([k]) => k !== 'failover' && k !== 'failedOverAt')
        .map(
          ([k, v]) =>
            html`<dt>${k}</dt>
              <dd>${String(v)}</dd>`,
        )}
    </dl>
    <h2>Objects in the standby, by kind (${total})</h2>
    ${
      o.targets.length === 0
        ? html`<p class="empty">Nothing replicated yet.</p>`
        : html`<div class="scroll">
            <table>
              <thead>
                <tr>
                  <th>Kind</th>
                  <th>Objects</th>
                </tr>
              </thead>
              <tbody>
                ${o.targets.map(
                  (t) =>
                    html`<tr>
                      <td>${t.name}</td>
                      <td>${t.objects ?? 0}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }
  </section>`;
}

const CHANGE_TEXT: Record<string, string> = { 'in-sync': 'in sync', drifted: 'drifted', missing: 'missing', prune: 'to prune', note: 'note' };

/** Every object the sync applies, against Git now: health, drift, and the diff (Secret values masked). */
function SyncObjects({ object: o, lead }: { object: UiObject; lead: string | undefined }): ComponentChildren {
  const [state, setState] = useState<{ loading: boolean; diff?: UiSyncDiff; error?: string }>({ loading: true });
  const load = (): void => {
    setState((s) => ({ ...s, loading: true }));
    void getJson<UiSyncDiff>(`/api/diff/ConfigSync/${encodeURIComponent(o.namespace)}/${encodeURIComponent(o.name)}`).then((r) =>
      setState(r.ok ? { loading: false, diff: r.value } : { loading: false, error: r.error }),
    );
  };
  // Again when the sync applied something new (its revision or its status changed).
  useEffect(load, [o.key, o.source['revision'], o.source['lastAttemptedRevision'], o.facts['lastSyncedTime'], o.drifted, o.state]);
  const diff = state.diff;
  const differ = diff?.targets.reduce((n, t) => n + t.objects.filter((x) => x.diff !== '').length, 0) ?? 0;
  return html`<section class="objects">
    <h2>
      Objects against Git ${diff !== undefined && html`<code>@ ${diff.revision.slice(0, 12)}</code>`}
      <button class="small" disabled=${state.loading} onClick=${load}>${state.loading ? 'Comparing…' : 'Compare again'}</button>
    </h2>
    ${state.error !== undefined && (repeats(state.error, lead) ? html`<p class="diff-error">Not compared: ${ABOVE}</p>` : html`<p class="diff-error" role="alert">${state.error}</p>`)}
    ${
      diff !== undefined &&
      html`<p class="hint">
          ${differ === 0 ? 'Live equals Git for every object (syncline diff would print nothing).' : `${differ} object(s) differ from Git.`} Secret values are
          never shown.
        </p>
        ${diff.targets.map(
          (t) =>
            html`<h3>
                target
                ${t.name}${t.cluster === undefined ? '' : ` (cluster ${t.cluster})`}${t.engine === undefined ? '' : html` <span class="hint" data-engine=${t.engine}>rendered by ${t.engine}</span>`}
              </h3>
              ${t.skipped !== undefined && html`<p class="hint">${t.skipped}</p>`}
              ${t.blocked !== undefined && html`<p class="result bad">blocked: ${t.blocked}</p>`}
              <ul class="applied">
                ${t.objects.map(
                  (x) =>
                    html`<li class=${`applied-object ${x.change}`} data-object=${x.label}>
                      <span class=${`change ${x.change}`}>${CHANGE_TEXT[x.change]}</span> <code>${x.label}</code>
                      ${x.health !== undefined && html` <span class=${`health ${x.health}`} title=${x.healthMessage ?? ''}>${x.health}</span>`}
                      ${x.note !== undefined && html` <span class="msg">${x.note}</span>`}
                      ${
                        x.diff !== '' &&
                        html`<details open=${x.change === 'drifted'}>
                          <summary>diff</summary>
                          <${DiffText} text=${x.diff} />
                        </details>`
                      }
                    </li>`,
                )}
              </ul>`,
        )}`
    }
  </section>`;
}

const HEALTH_CLASS: Record<string, string> = { Current: 'good', InProgress: 'progressing', Failed: 'bad', Missing: 'bad', Unknown: 'unknown' };

/** How often an open resource tree is read again. */
const TREE_REFRESH_MS = 10_000;

/** What each target applied and what those objects own (ReplicaSets, Pods, Jobs), with health and Events, as Argo CD draws it. */
function ResourceTree({ object: o }: { object: UiObject }): ComponentChildren {
  const [state, setState] = useState<{ tree?: UiTree; error?: string }>({});
  useEffect(() => {
    // Pods, ReplicaSets and Events change without the sync changing, and a right just granted shows only once the
    // server's access answers expire: read the tree again while the page is open, as Argo CD's live tree does.
    const load = (): void => {
      void getJson<UiTree>(`/api/tree/ConfigSync/${encodeURIComponent(o.namespace)}/${encodeURIComponent(o.name)}`).then((r) =>
        setState(r.ok ? { tree: r.value } : { error: r.error }),
      );
    };
    load();
    const timer = setInterval(load, TREE_REFRESH_MS);
    return () => clearInterval(timer);
  }, [o.key, o.source['revision'], o.facts['lastSyncedTime'], o.state]);
  return html`<section class="tree">
    <h2>Resource tree</h2>
    ${state.error !== undefined && html`<p class="hint">${state.error}</p>`}
    ${state.tree?.targets.map(
      (t) =>
        html`<div class="tree-target" data-target=${t.name}>
          <h3>target ${t.name}${t.namespace === undefined ? '' : ` → ${t.namespace}`}${t.cluster === undefined ? '' : ` (cluster ${t.cluster})`}</h3>
          ${t.skipped !== undefined && html`<p class="hint">${t.skipped}</p>`}
          <ul class="tree-nodes">
            ${t.nodes.map((n) => html`<${TreeNode} node=${n} />`)}
          </ul>
          ${
            t.hooks !== undefined &&
            t.hooks.length > 0 &&
            html`<h4 class="tree-hooks-title">Hooks of commit <code>${(t.hooksRevision ?? '').slice(0, 12)}</code></h4>
              <ul class="tree-nodes tree-hooks">
                ${t.hooks.map((h) => html`<${HookNode} hook=${h} />`)}
              </ul>`
          }
          ${t.hidden > 0 && html`<p class="hint">${t.hidden} object(s) you may not get are not shown.</p>`}
        </div>`,
    )}
  </section>`;
}

function TreeNode({ node }: { node: UiTreeNode }): ComponentChildren {
  return html`<li class="tree-node" data-node=${`${node.kind}/${node.name}`}>
    <span class="node-kind">${node.kind}</span> <code>${node.name}</code>
    <span class=${`health ${HEALTH_CLASS[node.health] ?? 'unknown'}`} title=${node.healthMessage}>${node.health}</span
    >${node.healthMessage !== '' && html` <span class="msg">${node.healthMessage}</span>`}
    ${
      node.events.length > 0 &&
      html`<ul class="node-events">
        ${node.events.map((e) => html`<li class=${`event ${e.type === 'Warning' ? 'warning' : 'normal'}`}><span class="reason">${e.reason}</span> <span class="msg">${e.message}</span>${e.count > 1 ? ` (x${e.count})` : ''}</li>`)}
      </ul>`
    }
    ${
      node.children.length > 0 &&
      html`<ul class="tree-nodes">
        ${node.children.map((c) => html`<${TreeNode} node=${c} />`)}
      </ul>`
    }
  </li>`;
}

const HOOK_PHASE_CLASS: Record<string, string> = { Succeeded: 'good', Running: 'progressing', Pending: 'unknown', Failed: 'bad' };

/** A hook of the last hooked commit: when it runs, its phase, how long it ran, its message; under it what its object owns (a Job's Pods). */
function HookNode({ hook: h }: { hook: UiTreeHook }): ComponentChildren {
  const node = h.node;
  return html`<li class="tree-node tree-hook" data-hook=${`${h.hook}/${h.kind}/${h.name}`}>
    <span class="hook-type">${h.hook}</span> <span class="node-kind">${h.kind}</span> <code>${h.name}</code>
    <span class=${`health hook-phase ${HOOK_PHASE_CLASS[h.phase] ?? 'unknown'}`}>${h.phase}</span
    >${h.duration !== undefined && html` <span class="hook-duration">${h.duration}</span>`}${h.message !== undefined && h.message !== '' && html` <span class="msg">${h.message}</span>`}
    ${node === undefined && h.phase !== 'Pending' && html` <span class="hint">(its object is gone)</span>`}
    ${
      node !== undefined &&
      node.events.length > 0 &&
      html`<ul class="node-events">
        ${node.events.map((e) => html`<li class=${`event ${e.type === 'Warning' ? 'warning' : 'normal'}`}><span class="reason">${e.reason}</span> <span class="msg">${e.message}</span>${e.count > 1 ? ` (x${e.count})` : ''}</li>`)}
      </ul>`
    }
    ${
      node !== undefined &&
      node.children.length > 0 &&
      html`<ul class="tree-nodes">
        ${node.children.map((c) => html`<${TreeNode} node=${c} />`)}
      </ul>`
    }
  </li>`;
}

/** The deploys, newest first: roll back to one, or compare any two. */
function History({ object: o, busy, run }: { object: UiObject; busy: boolean; run: Run }): ComponentChildren {
  const [from, setFrom] = useState(o.history[1]?.revision ?? '');
  const [to, setTo] = useState(o.history[0]?.revision ?? '');
  const [compared, setCompared] = useState<{ loading: boolean; diff?: UiDeployDiff; error?: string } | undefined>(undefined);
  const [commits, setCommits] = useState<Record<string, UiCommit>>({});
  useEffect(() => {
    void getJson<Record<string, UiCommit>>(`/api/commits/ConfigSync/${encodeURIComponent(o.namespace)}/${encodeURIComponent(o.name)}`).then(
      (r) => r.ok && setCommits(r.value),
    );
  }, [o.key, o.history[0]?.revision]);
  const compare = (): void => {
    setCompared({ loading: true });
    void getJson<UiDeployDiff>(`/api/deploys/ConfigSync/${encodeURIComponent(o.namespace)}/${encodeURIComponent(o.name)}?from=${from}&to=${to}`).then((r) =>
      setCompared(r.ok ? { loading: false, diff: r.value } : { loading: false, error: r.error }),
    );
  };
  return html`<section class="history">
    <h2>Deploy history</h2>
    <div class="scroll">
      <table>
        <thead>
          <tr>
            <th>From</th>
            <th>To</th>
            <th>Revision</th>
            <th>Commit</th>
            <th>Author</th>
            <th>Applied</th>
            <th>Objects</th>
            <th>Digest</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          ${o.history.map(
            (d) =>
              html`<tr>
                <td>
                  <input
                    type="radio"
                    name="from"
                    aria-label=${`compare from ${d.revision}`}
                    checked=${from === d.revision}
                    onChange=${() => setFrom(d.revision)}
                  />
                </td>
                <td>
                  <input type="radio" name="to" aria-label=${`compare to ${d.revision}`} checked=${to === d.revision} onChange=${() => setTo(d.revision)} />
                </td>
                <td><code>${d.revision.slice(0, 12)}</code></td>
                <td class="commit-message" title=${commits[d.revision]?.message ?? ''}>${commits[d.revision]?.subject ?? ''}</td>
                <td class="commit-author" title=${commits[d.revision]?.email ?? ''}>${commits[d.revision]?.author ?? ''}</td>
                <td><time>${d.appliedAt ?? ''}</time></td>
                <td>${d.objects ?? ''}</td>
                <td><code>${(d.digest ?? '').slice(0, 12)}</code></td>
                <td>
                  ${d.revision !== o.source['revision'] && html`<button class="rollback" data-revision=${d.revision} disabled=${busy} onClick=${() => void run('rollback', d.revision)}>Roll back</button>`}
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
    ${
      o.history.length > 1 &&
      html`<p>
        <button class="compare" disabled=${from === '' || to === '' || from === to || compared?.loading === true} onClick=${compare}>
          Compare ${from.slice(0, 7)} → ${to.slice(0, 7)}
        </button>
        <span class="hint"> both rendered with the sync's values of today; Secret values are never shown</span>
      </p>`
    }
    ${compared?.error !== undefined && html`<p class="diff-error" role="alert">${compared.error}</p>`}
    ${
      compared?.diff !== undefined &&
      (compared.diff.objects.length === 0
        ? html`<p class="deploy-diff empty">The two deploys render the same objects.</p>`
        : html`<div class="deploy-diff">
            ${compared.diff.objects.map(
              (d) =>
                html`<h3><code>${d.label}</code> <span class="hint">target ${d.target}</span></h3>
                  <${DiffText} text=${d.diff} />`,
            )}
          </div>`)
    }
  </section>`;
}
