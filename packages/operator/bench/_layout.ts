// Where the operator bench's syncs apply, and how the operator is scoped (`--layout`, `--scope`):
// - `--layout shared` (the default): every sync applies into the bench namespace, beside the ConfigSyncs;
// - `--layout namespace-per-sync`: sync sN applies into its own namespace bench-app-N (a namespace per
//   application), the ConfigSyncs' namespace trusted to write there;
// - `--scope namespace` (the default): the operator runs with --namespace <bench namespace>; `--scope cluster`:
//   it watches every namespace.
import type { KubeRest } from '@syncline/operator';
import { pool } from './_environment.ts';

export const LAYOUTS = ['shared', 'namespace-per-sync'] as const;
export type Layout = (typeof LAYOUTS)[number];
export const SCOPES = ['namespace', 'cluster'] as const;
export type Scope = (typeof SCOPES)[number];

export type BenchLayout = {
  /** The operator's flags for this layout and scope. */
  readonly operatorArgs: readonly string[];
  /** The namespace sync `i` applies into. */
  targetNamespace(i: number): string;
  /** One line for the report. */
  readonly description: string;
};

/** Checks the flags and creates the namespaces the layout's syncs apply into. */
export async function benchLayout(input: { layout: string; scope: string; namespace: string; syncs: number; rest: KubeRest }): Promise<BenchLayout> {
  const layout = oneOf(LAYOUTS, input.layout, '--layout');
  const scope = oneOf(SCOPES, input.scope, '--scope');
  const { namespace } = input;
  const operatorArgs = scope === 'namespace' ? ['--namespace', namespace] : [];
  const where = scope === 'namespace' ? `operator with --namespace ${namespace}` : 'operator cluster-wide';
  if (layout === 'shared') return { operatorArgs, targetNamespace: () => namespace, description: `every sync applies into ${namespace}; ${where}` };
  const targetNamespace = (i: number): string => `${namespace}-app-${i}`;
  await pool(
    Array.from({ length: input.syncs }, (_, i) => i),
    16,
    (i) => input.rest.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: targetNamespace(i) } } }),
  );
  return {
    operatorArgs: [...operatorArgs, '--trusted-namespaces', namespace],
    targetNamespace,
    description: `each sync applies into its own namespace (${targetNamespace(0)} …); ${where}`,
  };
}

function oneOf<T extends string>(choices: readonly T[], value: string, flag: string): T {
  if (!(choices as readonly string[]).includes(value)) throw new Error(`${flag} ${value}: expected one of ${choices.join(', ')}`);
  return value as T;
}
