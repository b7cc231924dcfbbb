// The official CLIs Syncline's render engines are compared against, each built from its Go module by
// ensureGoTool (cached by package, version and flags; one build at a time per machine). Versions match the
// modules packages/render/engine is built from, so both sides run the same engine code.
import { ensureGoTool, type GoToolOptions } from './go-tool.ts';

/** The newest Helm v3 (`go list -m -versions helm.sh/helm/v3`); packages/render/engine/go.mod requires the same. */
export const HELM_VERSION = 'v3.22.0';
/**
 * The Kubernetes minor of the k8s.io modules this Helm version requires (v0.37 → 1.37). Helm's Makefile
 * passes it at link time; without it `helm template` and `helm lint` assume Kubernetes 1.20.
 */
const HELM_KUBE_MINOR = '37';

/** Kustomize v5.8.2 is built on sigs.k8s.io/kustomize/api v0.21.2, the version packages/render/engine uses. */
export const KUSTOMIZE_VERSION = 'v5.8.2';
export const JSONNET_VERSION = 'v0.22.0';

export function ensureHelm(options: GoToolOptions = {}): Promise<string> {
  const ldflags = [
    `-X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}`,
    '-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1',
    `-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${HELM_KUBE_MINOR}`,
    '-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1',
    `-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${HELM_KUBE_MINOR}`,
  ].join(' ');
  return ensureGoTool({ name: 'helm', pkg: 'helm.sh/helm/v3/cmd/helm', version: HELM_VERSION, ldflags }, options);
}

export function ensureKustomize(options: GoToolOptions = {}): Promise<string> {
  return ensureGoTool({ name: 'kustomize', pkg: 'sigs.k8s.io/kustomize/kustomize/v5', version: KUSTOMIZE_VERSION }, options);
}

export function ensureJsonnet(options: GoToolOptions = {}): Promise<string> {
  return ensureGoTool({ name: 'jsonnet', pkg: 'github.com/google/go-jsonnet/cmd/jsonnet', version: JSONNET_VERSION }, options);
}
