// The finalizer and annotations the operator sets on its own objects, for every module that reads or writes them
// (reconcilers, the webhook receiver, the web UI, the CLI): they belong to the API, not to one reconciler.

/** The finalizer of a ConfigSync: its deletion prunes what it applied (deletionPolicy Delete) first. */
export const FINALIZER = 'syncline.dev/finalizer';
/** Set (to a time) to ask for a reconcile now; status.lastHandledReconcileAt echoes it once handled (Flux's requestedAt). */
export const RECONCILE_REQUESTED_ANNOTATION = 'syncline.dev/reconcile-requested-at';
