// A fixed API discovery for callers without a cluster (`syncline render`, tests): the built-in Kubernetes
// kinds, plus whatever the caller adds. The operator passes the live discovery instead.
import type { ApiDiscovery } from './objects.ts';

const clusterScoped = [
  'v1/Namespace',
  'v1/Node',
  'v1/PersistentVolume',
  'v1/ComponentStatus',
  'apiextensions.k8s.io/CustomResourceDefinition',
  'apiregistration.k8s.io/APIService',
  'rbac.authorization.k8s.io/ClusterRole',
  'rbac.authorization.k8s.io/ClusterRoleBinding',
  'storage.k8s.io/StorageClass',
  'storage.k8s.io/CSIDriver',
  'storage.k8s.io/CSINode',
  'storage.k8s.io/VolumeAttachment',
  'scheduling.k8s.io/PriorityClass',
  'networking.k8s.io/IngressClass',
  'node.k8s.io/RuntimeClass',
  'admissionregistration.k8s.io/MutatingWebhookConfiguration',
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicy',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding',
  'certificates.k8s.io/CertificateSigningRequest',
  'flowcontrol.apiserver.k8s.io/FlowSchema',
  'flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration',
];
const namespaced = [
  'v1/ConfigMap',
  'v1/Secret',
  'v1/Service',
  'v1/ServiceAccount',
  'v1/Pod',
  'v1/PersistentVolumeClaim',
  'v1/Endpoints',
  'v1/LimitRange',
  'v1/ResourceQuota',
  'v1/ReplicationController',
  'v1/Event',
  'v1/PodTemplate',
  'apps/Deployment',
  'apps/StatefulSet',
  'apps/DaemonSet',
  'apps/ReplicaSet',
  'apps/ControllerRevision',
  'batch/Job',
  'batch/CronJob',
  'autoscaling/HorizontalPodAutoscaler',
  'policy/PodDisruptionBudget',
  'networking.k8s.io/Ingress',
  'networking.k8s.io/NetworkPolicy',
  'rbac.authorization.k8s.io/Role',
  'rbac.authorization.k8s.io/RoleBinding',
  'coordination.k8s.io/Lease',
  'discovery.k8s.io/EndpointSlice',
  'events.k8s.io/Event',
];

function groupKind(apiVersion: string, kind: string): string {
  const slash = apiVersion.indexOf('/');
  return `${slash === -1 ? 'v1' : apiVersion.slice(0, slash)}/${kind}`;
}

/**
 * Discovery from a fixed table: the built-in kinds, plus `extra` entries keyed `group/Kind` (`v1/Kind` for the
 * core group), e.g. `{ 'syncline.dev/ConfigSync': true }`.
 */
export function createStaticDiscovery(extra: Readonly<Record<string, boolean>> = {}): ApiDiscovery {
  const scopes = new Map<string, boolean>([
    ...clusterScoped.map((k) => [k, false] as const),
    ...namespaced.map((k) => [k, true] as const),
    ...Object.entries(extra),
  ]);
  return { isNamespaced: (apiVersion, kind) => scopes.get(groupKind(apiVersion, kind)) };
}
