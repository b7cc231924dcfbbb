// The I/O edge of apply: discovery, LIST, GET, server-side apply, DELETE and CRD waits over @syncline/kube's
// REST client (one keep-alive connection pool per client, undici's). The typed clients of @kubernetes/client-node
// cost a lot per call on this hot path and know nothing of arbitrary kinds; a KubeConnection (@syncline/kube)
// supplies the server, TLS material and credentials.
import { ApiError, createKubeRest, type KubeConfigLike, type KubeConnection } from '@syncline/kube';

/** The error class of the API server's answers (@syncline/kube's), which every call here rejects with. */
export { ApiError };
import { groupOf, parseObjectId, type KubeObject } from './identity.ts';

export type ResourceInfo = {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** The resource name in URLs, e.g. `deployments`. */
  readonly plural: string;
  readonly namespaced: boolean;
  /** The verbs the server allows on it (list, watch, …); undefined when discovery did not say. */
  readonly verbs?: readonly string[];
};

/** What the API server serves. `isNamespaced` is the shape the render package needs. */
export type Discovery = {
  isNamespaced(apiVersion: string, kind: string): boolean | undefined;
  resource(apiVersion: string, kind: string): ResourceInfo | undefined;
  /** The preferred served version of a group's kind. */
  preferred(group: string, kind: string): ResourceInfo | undefined;
  /** Every served kind, once each, at its preferred version. */
  kinds(): readonly ResourceInfo[];
};

export type ApplyClient = {
  /** Cached discovery; `refresh` reads it again (after a CRD was established). */
  discovery(options?: { refresh?: boolean }): Promise<Discovery>;
  /** Every object of a kind in a namespace ('' for cluster-scoped), or only those matching `labelSelector`. */
  list(scope: { group: string; kind: string; namespace: string; labelSelector?: string }, signal?: AbortSignal): Promise<KubeObject[]>;
  /** One object by id; undefined when it does not exist (or its kind is not served). */
  get(id: string, signal?: AbortSignal): Promise<KubeObject | undefined>;
  /**
   * Server-side apply. The stored object is returned only with `read` (parsing 1,000 responses costs CPU the API
   * server needs): the operator reads it to prove what it wrote (see unchanged.ts), a one-off apply does not.
   * `ifAbsent`: create only. The apply carries a resourceVersion no stored object can have, so the API server
   * creates the object when the name is free and answers 409 Conflict, writing nothing, when anything exists
   * there (whoever made it, whenever): a proof of absence and the create in one request, with no window between.
   */
  apply(
    object: KubeObject,
    options: { fieldManager: string; force: boolean; read?: boolean; ifAbsent?: boolean; signal?: AbortSignal },
  ): Promise<KubeObject | undefined>;
  /** A JSON patch (RFC 6902) of one object; the stored object is not read. A failed `test` is a 422 ApiError. */
  jsonPatch(id: string, operations: readonly unknown[], options: { apiVersion?: string; signal?: AbortSignal }): Promise<void>;
  /** Deletes with a uid precondition when given; 'absent' when it was already gone. */
  delete(id: string, options: { apiVersion?: string; uid?: string; signal?: AbortSignal }): Promise<'deleted' | 'absent'>;
  /** Resolves once the CRD reports Established and discovery serves its kind. */
  waitEstablished(crdName: string, options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<void>;
};

type Request = {
  /** Set by the transport (the client's request timeout). */
  timeoutMs?: number;
  method: 'GET' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  contentType?: string;
  accept?: string;
  signal?: AbortSignal;
  discardBody?: boolean;
};

type Transport = <T>(req: Request) => Promise<T>;

/**
 * Requests go through @syncline/kube's REST client, the one Kubernetes transport of the product: its own capped
 * socket pool per client, a deadline on every request (the wait for a socket included), the write fence. Errors
 * keep the shape apply's callers and statuses have always seen: the API server's own message, and a
 * TransportError for a connection that failed.
 */
async function createTransport(target: KubeConnection | KubeConfigLike, options: ClientOptions): Promise<Transport> {
  const rest = await createKubeRest(target, {
    userAgent: 'syncline-apply',
    requestSockets: options.requestSockets ?? REQUEST_SOCKETS,
    ...(options.writeFence === undefined ? {} : { writeFence: options.writeFence }),
  });
  const timeoutMs = options.requestTimeoutMs ?? DEFAULT_APPLY_TIMEOUT_MS;
  // The request itself carries the deadline (no copy of it per call), and a failure is reworded on the way out.
  return <T>(req: Request): Promise<T> => {
    req.timeoutMs = timeoutMs;
    return rest.request<T>(req).catch((error: unknown) => {
      throw reworded(req, error);
    });
  };
}

/** A failed request's error as apply's callers read it: the API server's own message, or a TransportError. */
function reworded(req: Request, error: unknown): unknown {
  if (error instanceof ApiError) {
    if (error.serverMessage === undefined && error.status < 300) return error; // Timeout, Fenced: already say why
    return new ApiError({
      status: error.status,
      reason: error.reason === 'Unknown' ? String(error.status) : error.reason,
      message: error.serverMessage ?? `${req.method} ${req.path}: HTTP ${error.status}`,
    });
  }
  if (req.signal?.aborted === true) return error;
  return new ApiError({
    status: 0,
    reason: 'TransportError',
    message: `${req.method} ${req.path}: ${error instanceof Error ? error.message : String(error)}`,
  });
}

type DiscoveredResource = {
  resource: string;
  responseKind?: { group?: string; version?: string; kind?: string };
  scope: 'Namespaced' | 'Cluster';
  verbs?: string[];
};
type AggregatedList = { kind?: string; items?: { metadata?: { name?: string }; versions?: { version: string; resources?: DiscoveredResource[] }[] }[] };
type LegacyResourceList = { resources: { name: string; kind: string; namespaced: boolean; verbs?: string[] }[] };
type LegacyGroupList = { groups: { name: string; versions: { groupVersion: string }[]; preferredVersion?: { groupVersion: string } }[] };

const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

function buildDiscovery(resources: ResourceInfo[], preferredOrder: ResourceInfo[]): Discovery {
  const byVersion = new Map<string, ResourceInfo>();
  for (const r of resources) byVersion.set(`${r.group}/${r.version}/${r.kind}`, r);
  const preferred = new Map<string, ResourceInfo>();
  for (const r of preferredOrder) if (!preferred.has(`${r.group}/${r.kind}`)) preferred.set(`${r.group}/${r.kind}`, r);
  const resource = (apiVersion: string, kind: string): ResourceInfo | undefined => {
    const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
    return byVersion.get(`${groupOf(apiVersion)}/${version}/${kind}`);
  };
  return {
    resource,
    isNamespaced: (apiVersion, kind) => resource(apiVersion, kind)?.namespaced,
    preferred: (group, kind) => preferred.get(`${group}/${kind}`),
    kinds: () => [...preferred.values()],
  };
}

/** Aggregated discovery (two requests), falling back to the per-group documents of older servers. */
async function discover(send: Transport): Promise<Discovery> {
  const [core, groups] = await Promise.all([
    send<AggregatedList>({ method: 'GET', path: '/api', accept: AGGREGATED }),
    send<AggregatedList & LegacyGroupList>({ method: 'GET', path: '/apis', accept: AGGREGATED }),
  ]);
  const all: ResourceInfo[] = [];
  if (core.kind === 'APIGroupDiscoveryList' && groups.kind === 'APIGroupDiscoveryList') {
    for (const item of [...(core.items ?? []), ...(groups.items ?? [])]) {
      const group = item.metadata?.name ?? '';
      // versions are listed in preference order
      for (const v of item.versions ?? []) {
        for (const r of v.resources ?? []) {
          if (r.responseKind?.kind === undefined || r.resource.includes('/')) continue;
          all.push({
            group,
            version: v.version,
            kind: r.responseKind.kind,
            plural: r.resource,
            namespaced: r.scope === 'Namespaced',
            ...(r.verbs === undefined ? {} : { verbs: r.verbs }),
          });
        }
      }
    }
    return buildDiscovery(all, all);
  }
  const groupVersions = [{ group: '', version: 'v1', preferred: true }];
  for (const g of groups.groups) {
    for (const v of g.versions)
      groupVersions.push({ group: g.name, version: v.groupVersion.slice(g.name.length + 1), preferred: v.groupVersion === g.preferredVersion?.groupVersion });
  }
  const lists = await Promise.all(
    groupVersions.map((gv) =>
      send<LegacyResourceList>({ method: 'GET', path: gv.group === '' ? '/api/v1' : `/apis/${gv.group}/${gv.version}` }).catch(() => ({ resources: [] })),
    ),
  );
  const preferredFirst: ResourceInfo[] = [];
  lists.forEach((list, i) => {
    const gv = groupVersions[i];
    if (gv === undefined) return;
    for (const r of list.resources) {
      if (r.name.includes('/')) continue;
      const info = {
        group: gv.group,
        version: gv.version,
        kind: r.kind,
        plural: r.name,
        namespaced: r.namespaced,
        ...(r.verbs === undefined ? {} : { verbs: r.verbs }),
      };
      all.push(info);
      if (gv.preferred) preferredFirst.push(info);
    }
  });
  return buildDiscovery(all, [...preferredFirst, ...all]);
}

function resourcePath(info: ResourceInfo, namespace: string, name?: string): string {
  const prefix = info.group === '' ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
  const ns = info.namespaced && namespace !== '' ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${prefix}${ns}/${info.plural}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}

/**
 * The path of one object. A cluster-scoped kind whose object names a namespace is refused: the API server would
 * take it at the cluster path whatever namespace its body says, so a check that reads the namespace (where a
 * write lands, whose it is) would be answered for a namespace the write never touches.
 */
function objectPath(info: ResourceInfo, ref: { readonly namespace: string; readonly name: string }): string {
  if (!info.namespaced && ref.namespace !== '') {
    throw new ApiError({
      status: 400,
      reason: 'BadRequest',
      message: `${info.kind} ${ref.name} is cluster-scoped but names namespace ${ref.namespace}: refused (a cluster-scoped object has no namespace)`,
    });
  }
  return resourcePath(info, ref.namespace, ref.name);
}

function notServed(what: string): ApiError {
  return new ApiError({ status: 404, reason: 'NotServed', message: `the API server does not serve ${what}` });
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });

/** The default of ClientOptions.requestTimeoutMs. */
const DEFAULT_APPLY_TIMEOUT_MS = 60_000;
/**
 * A resourceVersion as a precondition that no object meets: the API server compares it with the stored
 * object's (an etcd revision, a signed 64-bit number) and ignores it when it creates. The largest unsigned
 * 64-bit number still parses as a resourceVersion, and is not 0, which would mean "no precondition".
 */
const NO_OBJECT_HAS_THIS_VERSION = '18446744073709551615';
/**
 * Connections for one apply client's requests (parallel applies of many targets). Each keep-alive TLS connection
 * holds memory outside the JavaScript heap for as long as it lives (read buffers, OpenSSL's state, the HTTP
 * parser; ~165 KB with Node's http client), and a burst of applies opens every one of them: 64 of them were ~10 MB of the operator's peak
 * RSS. 16 requests in flight keep an API server busy (bench operator, 1,000 syncs: the same times to all Ready).
 */
const REQUEST_SOCKETS = 16;

export type ClientOptions = {
  /** Every request (discovery, LIST, apply, delete) fails after this long without an answer (default 60 s). */
  readonly requestTimeoutMs?: number;
  /** Once aborted, every write (apply, delete) fails at once and writes in flight are cut (a leader that lost its Lease). */
  readonly writeFence?: AbortSignal;
  /** Connections for the client's requests (default REQUEST_SOCKETS): `syncline run --api-connections`. */
  readonly requestSockets?: number;
};

/** An ApplyClient for the cluster and identity of a connection (or of a client-node KubeConfig's current context). */
export async function createApplyClient(target: KubeConnection | KubeConfigLike, options: ClientOptions = {}): Promise<ApplyClient> {
  const send = await createTransport(target, options);
  let cached: Promise<Discovery> | undefined;
  /** What `cached` resolved to, once it has: every request looks its kind up here without waiting on a promise. */
  let known: Discovery | undefined;
  const discovery = (options: { refresh?: boolean } = {}): Promise<Discovery> => {
    if (cached === undefined || options.refresh === true) {
      const next = discover(send);
      cached = next;
      known = undefined;
      next.then(
        (found) => {
          if (cached === next) known = found;
        },
        () => {
          if (cached === next) cached = undefined;
        },
      );
    }
    return cached;
  };
  /** A kind's resource in discovery `d` (its apiVersion's, else the preferred version). */
  const infoIn = (d: Discovery, group: string, kind: string, apiVersion?: string): ResourceInfo | undefined =>
    (apiVersion === undefined ? undefined : d.resource(apiVersion, kind)) ?? d.preferred(group, kind);

  const client: ApplyClient = {
    discovery,
    async list({ group, kind, namespace, labelSelector }, signal) {
      const info = infoIn(known ?? (await discovery()), group, kind);
      if (info === undefined) throw notServed(`${group}/${kind}`);
      if (info.namespaced && namespace === '')
        throw new ApiError({ status: 400, reason: 'BadRequest', message: `${group}/${kind} is namespaced and the object names no namespace` });
      const apiVersion = info.group === '' ? info.version : `${info.group}/${info.version}`;
      const items: KubeObject[] = [];
      let cont: string | undefined;
      do {
        const page = await send<{ items: KubeObject[]; metadata?: { continue?: string } }>({
          method: 'GET',
          path: resourcePath(info, namespace),
          query: { limit: '1000', ...(labelSelector === undefined ? {} : { labelSelector }), ...(cont === undefined ? {} : { continue: cont }) },
          signal,
        });
        // List items carry no apiVersion/kind. Set in place: the parsed page is ours, and a copy of each of 1,000
        // objects per LIST was a good part of a reconcile burst's garbage.
        for (const item of page.items) {
          const typed = item as { apiVersion: string; kind: string };
          typed.apiVersion = apiVersion;
          typed.kind = kind;
          items.push(item);
        }
        cont = page.metadata?.continue === '' ? undefined : page.metadata?.continue;
      } while (cont !== undefined);
      return items;
    },
    async get(id, signal) {
      const ref = parseObjectId(id);
      const info = infoIn(known ?? (await discovery()), ref.group, ref.kind);
      if (info === undefined) return undefined;
      try {
        const obj = await send<KubeObject>({ method: 'GET', path: objectPath(info, ref), signal });
        return obj;
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return undefined;
        throw error;
      }
    },
    async apply(object, { fieldManager, force, read, ifAbsent, signal }) {
      let info = infoIn(known ?? (await discovery()), groupOf(object.apiVersion), object.kind, object.apiVersion);
      // A kind from a CRD applied moments ago: read discovery again once.
      if (info === undefined || info.version !== (object.apiVersion.split('/')[1] ?? object.apiVersion)) {
        info = (await discovery({ refresh: true })).resource(object.apiVersion, object.kind);
      }
      if (info === undefined) throw notServed(`${object.apiVersion} ${object.kind}`);
      return send<KubeObject | undefined>({
        discardBody: read !== true,
        method: 'PATCH',
        path: objectPath(info, { namespace: object.metadata.namespace ?? '', name: object.metadata.name }),
        query: { fieldManager, ...(force ? { force: 'true' } : {}) },
        body: ifAbsent === true ? { ...object, metadata: { ...object.metadata, resourceVersion: NO_OBJECT_HAS_THIS_VERSION } } : object,
        contentType: 'application/apply-patch+yaml',
        signal,
      });
    },
    async jsonPatch(id, operations, { apiVersion, signal }) {
      const ref = parseObjectId(id);
      const info = infoIn(known ?? (await discovery()), ref.group, ref.kind, apiVersion);
      if (info === undefined) throw notServed(`${ref.group}/${ref.kind}`);
      await send({ discardBody: true, method: 'PATCH', path: objectPath(info, ref), body: operations, contentType: 'application/json-patch+json', signal });
    },
    async delete(id, { apiVersion, uid, signal }) {
      const ref = parseObjectId(id);
      const info = infoIn(known ?? (await discovery()), ref.group, ref.kind, apiVersion);
      if (info === undefined) return 'absent';
      try {
        await send({
          discardBody: true,
          method: 'DELETE',
          path: objectPath(info, ref),
          body: { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Background', ...(uid === undefined ? {} : { preconditions: { uid } }) },
          signal,
        });
        return 'deleted';
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return 'absent';
        throw error;
      }
    },
    async waitEstablished(crdName, options = {}) {
      const deadline = Date.now() + (options.timeoutMs ?? 60_000);
      for (;;) {
        const crd = await send<{
          spec?: { group?: string; names?: { kind?: string }; versions?: { name: string; served?: boolean }[] };
          status?: { conditions?: { type: string; status: string }[] };
        }>({
          method: 'GET',
          path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${encodeURIComponent(crdName)}`,
          signal: options.signal,
        });
        const established = crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true;
        if (established) {
          const version = crd.spec?.versions?.find((v) => v.served !== false)?.name ?? '';
          const apiVersion = `${crd.spec?.group ?? ''}/${version}`;
          const d = await discovery({ refresh: true });
          if (d.resource(apiVersion, crd.spec?.names?.kind ?? '') !== undefined) return;
        }
        if (Date.now() > deadline)
          throw new ApiError({
            status: 0,
            reason: 'Timeout',
            message: `the CRD ${crdName} was not established within ${(options.timeoutMs ?? 60_000) / 1000}s`,
          });
        await sleep(100, options.signal);
      }
    },
  };
  return client;
}
