// The trust every controller that acts on a tenant's behalf weighs (the operator's tenancy rules, notifications'
// event sources): which namespaces' objects act with the operator's rights beyond their own namespace, and the
// reason a refusal is reported under. The rules themselves live with the kinds that apply them.
import { Reason } from './conditions.ts';

/** The condition and target reason of a refused write (or read) outside an untrusted object's own namespace. */
export const NAMESPACE_NOT_ALLOWED = Reason.NamespaceNotAllowed;

/** Namespaces whose objects act with the operator's rights anywhere: the operator's own plus an explicit list. */
export type TrustedNamespaces = ReadonlySet<string>;
