// One request's abort signal: the caller's signal, an overall deadline and the write fence, combined
// without AbortSignal.any. A composite of AbortSignal.timeout and a long-lived signal (the fence) stays
// reachable until the timer fires, ~0.5 KB per request (500,000 requests kept 255 MB on Node 24); here the
// timer and the listeners go as soon as the request settles.

export type RequestSignal = {
  readonly signal: AbortSignal;
  /** What aborted it, if anything: the caller, the fence or the deadline. */
  cause(): 'caller' | 'fence' | 'deadline' | undefined;
  /** The request settled: drop the timer and the listeners. */
  done(): void;
};

export function requestSignal(options: { timeoutMs: number; signal?: AbortSignal | undefined; fence?: AbortSignal | undefined }): RequestSignal {
  const controller = new AbortController();
  let cause: 'caller' | 'fence' | 'deadline' | undefined;
  const abort = (why: 'caller' | 'fence' | 'deadline', reason: unknown): void => {
    if (cause !== undefined) return;
    cause = why;
    controller.abort(reason);
  };
  const onCaller = (): void => abort('caller', options.signal?.reason);
  const onFence = (): void => abort('fence', options.fence?.reason);
  if (options.signal?.aborted === true) onCaller();
  else options.signal?.addEventListener('abort', onCaller, { once: true });
  if (options.fence?.aborted === true) onFence();
  else options.fence?.addEventListener('abort', onFence, { once: true });
  const timer = setTimeout(() => abort('deadline', new DOMException('The operation timed out.', 'TimeoutError')), options.timeoutMs);
  timer.unref();
  return {
    signal: controller.signal,
    cause: () => cause,
    done() {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onCaller);
      options.fence?.removeEventListener('abort', onFence);
    },
  };
}
