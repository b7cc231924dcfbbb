// The flags every command shares, as commander hands them over (the subcommands' modules and cli.ts both use them).
export type Out = (text: string) => void;
export type KubeFlags = { namespace?: string; context?: string; kubeconfig?: string };
export type ListFlags = KubeFlags & { allNamespaces?: boolean; output: 'table' | 'json' | 'yaml' };
