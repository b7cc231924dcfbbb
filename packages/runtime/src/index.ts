// Public entry point of @syncline/runtime: what every controller runs on, whatever its kind. The controller
// manager (registration, a lane of one work queue per controller, leader election, liveness), the work queue
// (per-key dedup, backoff, one reconcile per key at a time), the reconcile shell (the object from the cache,
// deletion and the finalizer, an invalid spec, suspend, status written only when it changed, Events once per
// news, the reconcile metrics), conditions and their reasons, status writes, and durations. It depends on the
// API and @syncline/kube only.
export * from './queue.ts';
export * from './manager.ts';
export * from './shell.ts';
export * from './conditions.ts';
export * from './object-status.ts';
export * from './duration.ts';
export * from './trust.ts';
export * from './crds.ts';
export * from './trace.ts';
