// The page's state: one Server-Sent Events stream (/api/events: a snapshot, then upserts, deletes and recorded
// Events), and the URL (every view is one: filters in the query string, an object at /objects/KIND/NS/NAME).
import { useEffect, useState } from 'preact/hooks';
import type { UiActivity, UiObject } from '../model.ts';

export type Store = {
  objects: Map<string, UiObject>;
  activity: UiActivity[];
  username: string;
  csrf: string;
  connected: boolean;
  version: number;
  put: (object: UiObject) => void;
};

/** Activity entries kept in the page (newest last). */
const ACTIVITY_KEPT = 200;

export function useStore(): Store {
  const [store, setStore] = useState<Store>(() => ({
    objects: new Map(),
    activity: [],
    username: '',
    csrf: '',
    connected: false,
    version: 0,
    // A whole object fetched for its page replaces its brief form (unless an upsert came first).
    put: (object) =>
      setStore((s) => (s.objects.get(object.key)?.brief === true ? { ...s, objects: new Map(s.objects).set(object.key, object), version: s.version + 1 } : s)),
  }));
  useEffect(() => {
    const events = new EventSource('/api/events');
    const update = (change: (s: Store) => Partial<Store>): void => setStore((s) => ({ ...s, ...change(s), version: s.version + 1 }));
    const data = <T>(e: Event): T => JSON.parse((e as MessageEvent<string>).data) as T;
    events.addEventListener('snapshot', (e) => {
      const snapshot = data<{ username: string; csrf: string; objects: UiObject[]; activity?: UiActivity[] }>(e);
      update(() => ({
        objects: new Map(snapshot.objects.map((o) => [o.key, o])),
        activity: snapshot.activity ?? [],
        username: snapshot.username,
        csrf: snapshot.csrf,
        connected: true,
      }));
    });
    events.addEventListener('upsert', (e) => {
      const object = data<UiObject>(e);
      update((s) => ({ objects: new Map(s.objects).set(object.key, object) }));
    });
    events.addEventListener('delete', (e) => {
      const { key } = data<{ key: string }>(e);
      update((s) => {
        const objects = new Map(s.objects);
        objects.delete(key);
        return { objects };
      });
    });
    events.addEventListener('activity', (e) => {
      const entry = data<UiActivity>(e);
      update((s) => ({ activity: [...s.activity, entry].slice(-ACTIVITY_KEPT) }));
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

export function useLocation(): URL {
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

export function navigate(href: string, replace = false): void {
  if (replace) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  dispatchEvent(new PopStateEvent('popstate'));
}

/** GET a JSON answer of the UI's API: the value, or the error it names. */
export async function getJson<T>(path: string): Promise<{ ok: true; value: T } | { ok: false; error: string }> {
  try {
    const response = await fetch(path);
    const body = (await response.json().catch(() => ({}))) as T & { error?: string };
    return response.ok ? { ok: true, value: body } : { ok: false, error: `${response.status}: ${body.error ?? response.statusText}` };
  } catch (error) {
    return { ok: false, error: String(error) };
  }
}

export const objectHref = (o: { kind: string; namespace: string; name: string }): string =>
  `/objects/${o.kind}/${encodeURIComponent(o.namespace)}/${encodeURIComponent(o.name)}`;
