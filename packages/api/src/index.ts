// Public entry point of @syncline/api: the kinds' zod schemas (the source of the CRDs and docs/api.md), the CRDs
// built from them, and the finalizer and annotations the operator sets on its own objects. It depends on zod only:
// every other package (the runtime, the operator, notifications, the web UI, the CLI) reads the API from here.
// `pnpm generate` (src/generate.ts, a script outside this entry point) writes crds/ and docs/api.md.
export * from './v1alpha1.ts';
export { customResourceDefinitions, structuralSchema, apiReference } from './crd.ts';
export { FINALIZER, RECONCILE_REQUESTED_ANNOTATION } from './annotations.ts';
