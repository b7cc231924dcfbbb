// The ConfigSync API (group syncline.dev, version v1alpha1) as zod schemas. This module depends on zod
// only: TypeScript types come from z.infer, crds/*.yaml and docs/api.md are generated from it, and
// defaults live here.
import { z } from 'zod';

export const GROUP = 'syncline.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Go-style duration as Kubernetes users write it: 30s, 5m, 1h30m. */
export const Duration = z
  .string()
  .max(32)
  .regex(/^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/, 'a duration such as 30s, 5m or 1h30m')
  .meta({ description: 'A duration such as 30s, 5m or 1h30m.' });

/**
 * Bounds of every interval field of every kind. The floor stops one object from driving a hot loop against
 * the Git host or the API server (`0s` requeued at once); the ceiling keeps a delay inside what a Node
 * timer can hold (2^31-1 ms, ~596 h; above it the timer fires after 1 ms). The operator clamps again,
 * for objects stored before these rules existed.
 */
export const INTERVAL_BOUNDS = { min: '1s', max: '168h' } as const;

/** An interval (refresh, resync): a Duration between INTERVAL_BOUNDS.min and .max, checked at admission. */
export const Interval = Duration.meta({
  description: `A duration such as 30s, 5m or 1h30m, from ${INTERVAL_BOUNDS.min} to ${INTERVAL_BOUNDS.max}.`,
  'x-kubernetes-validations': [
    {
      rule: `duration(self) >= duration('${INTERVAL_BOUNDS.min}') && duration(self) <= duration('${INTERVAL_BOUNDS.max}')`,
      message: `must be between ${INTERVAL_BOUNDS.min} and ${INTERVAL_BOUNDS.max}`,
    },
  ],
});

const dnsLabel = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'a DNS label: lower-case letters, digits and dashes');

const objectName = z.string().min(1).max(253);

/** A point in time written by the operator (RFC 3339, UTC), so clients and `kubectl explain` know it is one. */
const Timestamp = (description: string) => z.string().meta({ format: 'date-time', description });

/** Adds a description to a JSON schema node without touching the zod type. */
const describe = <T extends z.ZodType>(schema: T, description: string): T => schema.meta({ description });

/** Free-form values for templates: any JSON object. */
const Values = z.record(z.string(), z.unknown()).meta({ 'x-kubernetes-preserve-unknown-fields': true });

export const LocalObjectReference = z.object({ name: describe(objectName, 'Name of the object, in the same namespace.') });

export const GitSource = z
  .object({
    repo: z.string().min(1).meta({
      description:
        'Repository URL: https://host/path, ssh://[user@]host[:port]/path or the scp-like user@host:path (SSH needs secretRef with identity and known_hosts).',
    }),
    revision: z
      .string()
      .min(1)
      .default('main')
      .meta({ description: 'A branch, a tag or a full 40-hex commit SHA. A SHA pins the sync: that is how you roll back.' }),
    path: z.string().default('').meta({ description: 'A directory of manifests/templates, or one file; empty = the repository root.' }),
    secretRef: LocalObjectReference.optional().meta({
      description:
        'A Secret in the same namespace: username+password or bearerToken keys for https, and ca.crt (PEM) to trust a private CA for that server besides the system roots; identity (a private key) and known_hosts for SSH.',
    }),
    proxySecretRef: LocalObjectReference.optional().meta({
      description:
        'A Secret in the same namespace naming the forward proxy every https request to the repository goes through (an HTTP CONNECT tunnel): address (http://host:port, required), username and password (optional). Not for SSH repositories.',
    }),
  })
  // http:// passes the API so that an operator started with --allow-insecure-http (tests, the demo) can
  // use it; the operator refuses it otherwise.
  .meta({
    description: 'A Git repository, the revision to follow and the path within it.',
    'x-kubernetes-validations': [
      {
        rule: "self.repo.startsWith('https://') || self.repo.startsWith('http://') || self.repo.startsWith('ssh://') || self.repo.matches('^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]')",
        message:
          'repo must start with https://, http:// (refused by the operator unless --allow-insecure-http) or ssh://, or be user@host:path; git://, file:// and ext:: are not supported',
      },
    ],
  });

/** Flux Kustomization fields that change a `kustomize build` (written into the kustomization before it runs). */
const KustomizeFields = {
  targetNamespace: dnsLabel
    .optional()
    .meta({ description: "Sets the namespace of every namespaced object the build yields (the kustomization's namespace field; Flux: targetNamespace)." }),
  namePrefix: z.string().max(200).optional().meta({ description: "Prefix for every object name (the kustomization's namePrefix)." }),
  nameSuffix: z.string().max(200).optional().meta({ description: "Suffix for every object name (the kustomization's nameSuffix)." }),
  images: z
    .array(
      z.object({
        name: describe(z.string().min(1), 'The image name to match, as in the manifests (e.g. nginx).'),
        newName: describe(z.string(), 'Replace the name (e.g. registry.example.com/nginx).').optional(),
        newTag: describe(z.string(), 'Replace the tag.').optional(),
        digest: describe(z.string(), 'Replace the tag with this digest (sha256:...).').optional(),
      }),
    )
    .max(100)
    .optional()
    .meta({ description: "Image overrides, appended to the kustomization's images." }),
  patches: z
    .array(
      z.object({
        patch: describe(z.string().min(1), "A strategic merge patch or a JSON 6902 patch (YAML), as in a kustomization's patches."),
        target: z
          .object({
            group: describe(z.string().optional(), 'API group of the objects to patch (empty: the core group).'),
            version: describe(z.string().optional(), 'API version of the objects to patch.'),
            kind: describe(z.string().optional(), 'Kind of the objects to patch.'),
            name: describe(z.string().optional(), 'Name of the object to patch (a regular expression, as in Kustomize).'),
            namespace: describe(z.string().optional(), 'Namespace of the objects to patch.'),
            labelSelector: describe(z.string().optional(), 'Label selector the objects to patch match (`app=web,tier!=db`).'),
            annotationSelector: describe(z.string().optional(), 'Annotation selector the objects to patch match.'),
          })
          .optional()
          .meta({ description: 'Which objects the patch applies to (required for a JSON 6902 patch).' }),
      }),
    )
    .max(100)
    .optional()
    .meta({ description: "Patches appended to the kustomization's patches." }),
  components: z
    .array(z.string().min(1))
    .max(50)
    .optional()
    .meta({ description: 'Components (paths relative to the kustomization) appended to its components.' }),
  commonMetadata: z
    .object({
      labels: z.record(z.string(), z.string()).optional().meta({ description: 'Labels set on every object (not on selectors).' }),
      annotations: z.record(z.string(), z.string()).optional().meta({ description: 'Annotations set on every object.' }),
    })
    .optional()
    .meta({ description: 'Labels and annotations on every object the build yields (Flux: commonMetadata).' }),
};

export const KustomizeSource = z.object(KustomizeFields).meta({
  description:
    'Render with Kustomize (`kustomize build` of the path, or of targets[].path). Also chosen without this field when the path holds a kustomization.yaml, as Flux does. Only files of the repository are read (root-only load restrictor); exec functions and plugins are refused, and so are remote bases and resources (a Git repo spec or URL in resources, components or bases, in any kustomization the build reads): RenderFailed naming the kustomization file and the entry; vendor them into the repository.',
});

export const HelmChartRepository = z
  .object({
    url: z.string().min(1).max(2048).meta({
      description:
        "Where the chart is published: a Helm repository (https://host/path, whose index.yaml lists the chart) or an OCI registry (oci://host/path; the chart is the OCI repository path/<chart>, as `helm pull oci://host/path/<chart>`). http:// and insecure registries need the operator's --allow-insecure-http.",
    }),
    chart: z
      .string()
      .min(1)
      .max(250)
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a chart name')
      .meta({ description: "The chart's name in the repository or registry (Flux: chart.spec.chart; Argo CD: chart)." }),
    version: z.string().max(256).default('').meta({
      description:
        'An exact version or a semver range (^1.2, ~1.2.3, >=1.0 <2.0), chosen as Helm chooses: an exact match first, else the newest version the range admits; empty = the newest release that is not a prerelease. Looked up again every refreshInterval, so a range follows new releases (Flux: chart.spec.version; Argo CD: targetRevision).',
    }),
    digest: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/, 'sha256:<64 hex digits>')
      .optional()
      .meta({
        description:
          "Pin the chart by digest: for OCI the manifest digest (what helm push prints), for a Helm repository the archive's sha256. Another digest fails the sync (FetchFailed, retried) and nothing is applied. Every download is verified against the index's or the registry's digest anyway.",
      }),
    secretRef: LocalObjectReference.optional().meta({
      description:
        "A Secret in this namespace (Flux HelmRepository's keys): username and password (basic auth to the repository's own host; for a registry also what its token service is asked with) and ca.crt (PEM) to trust a private CA besides the system roots; or, for an oci:// registry, a Secret of type kubernetes.io/dockerconfigjson (kubectl create secret docker-registry), whose .dockerconfigjson entry for the registry's host is used (ca.crt may sit beside it). Never sent to another host; refused credentials fail the sync (FetchFailed) naming the Secret, never its values.",
    }),
    insecure: z
      .boolean()
      .default(false)
      .meta({ description: 'OCI only: talk plain HTTP to the registry (helm --plain-http). Refused unless the operator runs with --allow-insecure-http.' }),
  })
  .meta({
    description:
      "Fetch the chart from a Helm repository or an OCI registry instead of the Git repository (values, valuesFrom and valuesFiles still come from the sync; valuesFiles from its Git source). The archive is verified by digest and cached by it; the render sees only the chart's files.",
  });

export const HelmSource = z
  .object({
    chart: z.string().optional().meta({
      description:
        'Repo-relative directory of the chart; default: the path. Dependencies must be vendored in its charts/ (nothing is downloaded). Not with repository.',
    }),
    repository: HelmChartRepository.optional(),
    releaseName: z.string().max(53).optional().meta({ description: "The release name templates see (.Release.Name); default: the ConfigSync's name." }),
    includeCRDs: z.boolean().default(true).meta({ description: "Apply the chart's crds/ directory too (helm template --include-crds)." }),
    skipTests: z
      .boolean()
      .default(true)
      .meta({ description: 'Leave out test hooks (helm template --skip-tests). false refuses a chart with test hooks: Syncline runs no helm test.' }),
    kubeVersion: z.string().optional().meta({ description: "Override .Capabilities.KubeVersion; default: the target cluster's version." }),
    apiVersions: z
      .array(z.string())
      .max(500)
      .optional()
      .meta({ description: "Added to .Capabilities.APIVersions, which holds the target cluster's served versions already." }),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: '!(has(self.chart) && has(self.repository))',
        message: 'chart (a directory of the Git repository) and repository (a published chart) exclude each other',
      },
    ],
    description:
      "Render a Helm chart held in the Git repository, or published in a Helm repository or OCI registry (repository) (helm template semantics): spec.values, valuesFrom and targets[].values are the chart's values. Applied like every other render (no Helm release Secrets); install/upgrade hooks become apply waves, other hooks are refused; lookup is refused. Also chosen without this field when the path holds a Chart.yaml.",
  });

export const JsonnetSource = z
  .object({
    main: z.string().optional().meta({ description: 'The file to evaluate, relative to the path (omit when the path is the file).' }),
    libraryPaths: z
      .array(z.string())
      .max(20)
      .optional()
      .meta({ description: "Repo-relative directories searched for imports after the importing file's own (jsonnet -J)." }),
    extVars: z.record(z.string(), z.string()).optional().meta({ description: 'External variables as strings (jsonnet --ext-str), for std.extVar.' }),
    tlas: z.record(z.string(), z.string()).optional().meta({ description: 'Top-level arguments as strings (jsonnet --tla-str).' }),
  })
  .meta({ description: 'Render Jsonnet: the output is a Kubernetes object, a list of them, or objects nested in objects and arrays.' });

export const ValuesFromSource = z.object({
  kind: describe(z.enum(['ConfigMap', 'Secret']), 'Kind of the object holding the values.'),
  name: describe(objectName, 'Name of the ConfigMap or Secret, in the same namespace.'),
  key: describe(z.string().min(1), 'The data key holding a YAML or JSON object of values.').default('values.yaml'),
  optional: describe(z.boolean(), 'true: a missing object or key is skipped; false: it stops the sync (Stalled) until it exists.').default(false),
});

export const TargetPatch = z.object({
  target: z
    .object({
      kind: describe(z.string().min(1), 'Kind of the rendered object to patch.'),
      name: describe(objectName, 'Name of the rendered object to patch.'),
      apiVersion: describe(z.string(), 'apiVersion of the object to patch; omitted = any.').optional(),
      namespace: describe(z.string(), 'Namespace of the object to patch; omitted = any.').optional(),
    })
    .meta({ description: 'Which rendered object the patch applies to.' }),
  patch: Values.meta({ description: 'A JSON merge patch applied to the rendered object.' }),
});

export const DataMode = z.object({
  type: describe(z.enum(['ConfigMap', 'Secret']), 'Kind of the object the file(s) become.'),
  name: objectName.meta({ description: 'Name of the ConfigMap or Secret to create from the file(s).' }),
  key: z.string().min(1).optional().meta({ description: "Data key for a single file (default: the file's base name)." }),
});

/** Repo-relative values files (YAML, SOPS-encrypted or not), read from the same snapshot as the manifests. */
const ValuesFiles = z
  .array(
    z
      .string()
      .min(1)
      .max(1024)
      .regex(/^[^/]/, 'a repo-relative path (no leading /)')
      .refine((path) => !path.split('/').includes('..'), 'a repo-relative path without ".."'),
  )
  .max(20);

export const Decryption = z.object({
  provider: describe(z.enum(['sops']), 'How encrypted files are decrypted: `sops` (age, OpenPGP, Vault transit, AWS KMS).'),
  secretRef: LocalObjectReference.optional().meta({
    description:
      "A Secret in this namespace holding the keys: `*.agekey` (age identities), `*.asc` (armored OpenPGP private keys), `sops.vault-token`, `sops.aws-kms` (AWS credentials). Omitted: only the operator's own AWS credentials, when its admin allows them.",
  }),
});

export const Target = z.object({
  name: dnsLabel.meta({ description: 'Stable id of the target, unique in the list.' }),
  namespace: dnsLabel.optional().meta({ description: 'Namespace for namespaced objects that name none.' }),
  cluster: LocalObjectReference.optional().meta({ description: 'A RemoteCluster in this namespace; omitted = this cluster.' }),
  values: Values.optional().meta({ description: 'Values for this target, deep-merged over spec.values (arrays replace).' }),
  patches: z.array(TargetPatch).max(100).optional().meta({ description: 'JSON merge patches applied to rendered objects of this target, in order.' }),
  data: DataMode.optional().meta({
    description: 'Data mode: the file(s) at the path become one ConfigMap or Secret instead of manifests.',
  }),
  valuesFiles: ValuesFiles.optional().meta({
    description:
      'Repo-relative values files for this target, deep-merged in order over spec.valuesFrom and under target.values; SOPS-encrypted files are decrypted.',
  }),
  wait: z
    .boolean()
    .optional()
    .meta({ description: "Overrides spec.wait for this target: whether Ready (and the next apply wave) waits for this target's objects to be healthy." }),
  path: z.string().optional().meta({ description: 'Render this repo-relative path for this target instead of spec.source.git.path (e.g. overlays/prod).' }),
  kustomize: z.object(KustomizeFields).optional().meta({
    description:
      "Kustomize fields for this target: targetNamespace, namePrefix and nameSuffix replace spec.source.kustomize's; images, patches, components and commonMetadata are added to them.",
  }),
  jsonnet: z
    .object({
      extVars: z.record(z.string(), z.string()).optional().meta({ description: 'External variables for this target, over spec.source.jsonnet.extVars.' }),
      tlas: z.record(z.string(), z.string()).optional().meta({ description: 'Top-level arguments for this target, over spec.source.jsonnet.tlas.' }),
    })
    .optional()
    .meta({ description: 'Jsonnet inputs for this target.' }),
});

export const SyncPolicy = z.enum(['Sync', 'Keep', 'Adopt', 'Overwrite']);
export const DriftPolicy = z.enum(['Correct', 'Report']);
export const DeletionPolicy = z.enum(['Delete', 'Orphan']);

export const DependsOn = z.object({
  name: objectName.meta({ description: 'A ConfigSync in the same namespace that must be Ready at its current revision first.' }),
});

export const ConfigSyncSpec = z.object({
  source: z
    .object({
      git: GitSource,
      kustomize: KustomizeSource.optional(),
      helm: HelmSource.optional(),
      jsonnet: JsonnetSource.optional(),
    })
    .meta({
      description:
        'Where the manifests come from, and the engine that renders them: Handlebars templates and plain manifests (default), kustomize, helm or jsonnet (one at most).',
      'x-kubernetes-validations': [
        {
          rule: '(has(self.kustomize) ? 1 : 0) + (has(self.helm) ? 1 : 0) + (has(self.jsonnet) ? 1 : 0) <= 1',
          message: 'name one engine at most: kustomize, helm or jsonnet',
        },
      ],
    }),
  refreshInterval: Interval.default('5m').meta({
    description: 'How often the revision is resolved again and drift re-checked (webhooks make a push immediate), from 1s to 168h.',
  }),
  suspend: z.boolean().default(false).meta({ description: 'Stop fetching, applying and pruning; applied objects stay as they are.' }),
  values: Values.optional().meta({ description: 'Template values for every target (Handlebars context `values`).' }),
  valuesFrom: z
    .array(ValuesFromSource)
    .max(20)
    .optional()
    .meta({ description: 'ConfigMaps or Secrets in this namespace holding values, deep-merged in order over spec.values (a later one wins).' }),
  valuesFiles: ValuesFiles.optional().meta({
    description:
      'Repo-relative values files (YAML) read from the same commit, deep-merged in order under spec.values; SOPS-encrypted files are decrypted (spec.decryption). Listed files are values, never rendered as manifests.',
  }),
  decryption: Decryption.optional().meta({
    description: 'Decrypt SOPS-encrypted files of the source in memory before rendering. Without it, an encrypted file fails the sync (DecryptionFailed).',
  }),
  targets: z
    .array(Target)
    .min(1)
    .max(100)
    .meta({
      description: 'Where the rendered objects are applied: one entry per namespace and/or cluster.',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
    }),
  prune: z.boolean().default(true).meta({ description: 'Delete objects this sync applied earlier and no longer renders.' }),
  policy: SyncPolicy.default('Sync').meta({
    description: "An existing object that is not this sync's: Sync and Keep leave it (reported as a conflict), Adopt takes it over, Overwrite forces.",
  }),
  drift: DriftPolicy.default('Correct').meta({ description: 'Correct: a managed object edited by hand is re-applied; Report: a condition only.' }),
  deletionPolicy: DeletionPolicy.default('Delete').meta({ description: 'Delete: applied objects are deleted with the ConfigSync; Orphan: they stay.' }),
  serviceAccountName: dnsLabel.optional().meta({
    description:
      "Apply and prune with this ServiceAccount's rights (a token from the TokenRequest API): its RBAC decides per object. Without it (and without the operator's --default-service-account), the operator's own rights apply, only inside this namespace unless the namespace is trusted (--trusted-namespaces): other namespaces and cluster-scoped objects make the target Failed (NamespaceNotAllowed).",
  }),
  historyLimit: z.number().int().min(1).max(100).default(10).meta({ description: 'How many applied revisions status.history keeps (for rollback).' }),
  allowEmpty: z.boolean().default(false).meta({ description: 'Allow a render that yields zero objects to prune everything this sync applied.' }),
  wait: z.boolean().default(false).meta({
    description:
      'Ready waits until every applied object is healthy (kstatus rules), up to timeout; otherwise Ready=False with reason HealthCheckFailed. Objects annotated syncline.dev/apply-wave are applied a wave at a time, each once the previous one is healthy. Without wait, health is still reported (the Healthy condition, targets[].health).',
  }),
  timeout: Duration.optional().meta({
    description:
      'How long objects may take to become healthy, from the last apply (or from when health was lost), before the sync is HealthCheckFailed (default: 5m).',
  }),
  dependsOn: z.array(DependsOn).max(50).optional().meta({
    description:
      'ConfigSyncs in this namespace that must be Ready at their current revision before this one applies (e.g. CRDs before apps). A cycle is refused with a condition.',
  }),
});

export const ConditionType = z.enum([
  'Ready',
  'Synced',
  'Healthy',
  'Reconciling',
  'Stalled',
  'InvalidSource',
  'Failed',
  'IntervalClamped',
  'FailedOver',
  'Suspended',
  'Fenced',
  'PruneHeld',
]);

export const Condition = z.object({
  type: describe(z.string(), 'Type of the condition: Ready, Reconciling, Stalled, ... (one entry per type).'),
  status: describe(z.enum(['True', 'False', 'Unknown']), 'Status of the condition.'),
  observedGeneration: describe(z.number().int(), 'The metadata.generation the condition was set for.').optional(),
  lastTransitionTime: Timestamp('When the status last changed.'),
  reason: describe(z.string(), 'A CamelCase reason for the status, for machines.'),
  message: describe(z.string(), 'What happened, for people.'),
});

/** Standard conditions: one entry per type, merged by type (a server-side apply list-map). */
const Conditions = z.array(Condition).meta({
  description: 'Standard conditions (Ready, Reconciling, Stalled, ...), one per type.',
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
});

/** The generation the status was written for. */
const ObservedGeneration = describe(z.number().int(), 'The metadata.generation the status was last written for.');

export const TargetHealth = z
  .object({
    healthy: z.number().int().meta({ description: 'Applied objects that are Current (rolled out, complete, bound, established, Ready).' }),
    progressing: z.number().int().meta({ description: 'Objects still converging, and objects of later apply waves not applied yet.' }),
    failed: z.number().int().meta({ description: 'Objects that failed (e.g. ProgressDeadlineExceeded, a failed Job, Stalled=True).' }),
    unknown: z.number().int().meta({ description: 'Objects whose live state could not be read.' }),
  })
  .meta({ description: "Health of the target's applied objects, by the kstatus rules." });

export const HookStatus = z
  .object({
    hook: describe(
      z.enum(['PreSync', 'Sync', 'PostSync', 'SyncFail']),
      'When the hook runs: PreSync before the objects are applied, Sync with them, PostSync once they are healthy, SyncFail when the apply, their health or a hook failed.',
    ),
    kind: describe(z.string(), "The hook object's kind (Job, PipelineRun, TaskRun, ...)."),
    apiVersion: describe(z.string(), "The hook object's apiVersion."),
    namespace: describe(z.string(), 'The namespace the hook object runs in; empty when cluster-scoped.').optional(),
    name: describe(z.string(), "The hook object's name (generated from metadata.generateName when the source sets that)."),
    source: describe(z.string(), 'The hook as the source names it: Kind/name, or Kind/generateName for a generated name.'),
    phase: describe(
      z.enum(['Pending', 'Running', 'Succeeded', 'Failed']),
      'Pending: not created yet (waiting for an earlier step); Running; Succeeded; Failed (see message).',
    ),
    uid: describe(z.string(), 'The uid of the object this sync created for the hook.').optional(),
    startedAt: Timestamp('When this sync created the hook object.').optional(),
    finishedAt: Timestamp('When the hook was seen finished.').optional(),
    duration: describe(z.string(), 'How long the hook ran, from creation to the finish seen (e.g. 12s).').optional(),
    message: describe(z.string(), "What the hook's status says, or why it failed.").optional(),
  })
  .meta({ description: 'One hook of a target at the revision in hooksRevision.' });

export const TargetStatus = z.object({
  name: describe(z.string(), 'The target (spec.targets[].name).'),
  cluster: describe(z.string(), 'The RemoteCluster of the target; absent = this cluster.').optional(),
  namespace: describe(z.string(), 'The default namespace of the target.').optional(),
  phase: describe(z.enum(['Synced', 'Failed', 'Pending']), 'Synced: every object applied; Failed: see message; Pending: not tried yet.'),
  reason: describe(
    z.string(),
    'Why the target failed, for machines, when a rule refused it: NamespaceNotAllowed (the sync may not write there; nothing was written).',
  ).optional(),
  objects: describe(z.number().int(), 'How many objects the target holds.'),
  message: describe(z.string(), 'Why the target failed, or a notice.').optional(),
  lastSyncedTime: Timestamp('When the target last changed something in the cluster (or first synced).').optional(),
  health: TargetHealth.optional(),
  hooksRevision: describe(z.string(), 'The commit the hooks below ran for: each hook runs once per sync, target and commit.').optional(),
  hooks: z
    .array(HookStatus)
    .max(100)
    .optional()
    .meta({ description: 'The hooks (objects annotated syncline.dev/hook or argocd.argoproj.io/hook) of the target at hooksRevision.' }),
  engine: describe(
    z.enum(['handlebars', 'kustomize', 'helm', 'jsonnet']),
    'The engine that rendered the target at the last render: handlebars (templates and plain manifests), kustomize, helm or jsonnet.',
  ).optional(),
  chart: describe(z.string(), 'The published chart the target rendered (spec.source.helm.repository): name@version and its digest.').optional(),
});

export const TargetInventory = z.object({
  target: describe(z.string(), 'The target (or namespace) the entries were applied for.'),
  cluster: z.string().optional().meta({ description: 'The RemoteCluster the target applied to; absent = this cluster.' }),
  entries: z.array(z.string()).meta({ description: 'Compact object ids: group/Kind/namespace/name.' }),
});

export const HistoryEntry = z.object({
  revision: describe(z.string(), 'The commit SHA applied.'),
  appliedAt: Timestamp('When it was first applied.'),
  objects: describe(z.number().int(), 'How many objects it rendered.'),
  digest: describe(z.string(), 'Digest of the rendered objects: two entries with the same digest deployed the same thing.'),
});

export const ConfigSyncStatus = z.object({
  observedGeneration: ObservedGeneration.optional(),
  lastSyncedTime: Timestamp('When the sync last changed something in the cluster or applied a new revision.').optional(),
  sourceRevision: z.string().optional().meta({ description: 'The commit SHA last applied.' }),
  shortRevision: z.string().optional().meta({
    description:
      'The Revision column: sourceRevision shortened to 7 characters, and "(trying abc1234)" while another commit is being tried (lastAttemptedRevision, e.g. while it fails).',
  }),
  drifted: z
    .number()
    .int()
    .optional()
    .meta({ description: 'Objects that differ from what Git says and were left so (drift: Report), at the last apply (the Drifted column).' }),
  hookSummary: z.string().optional().meta({
    description:
      'The Hooks column (-o wide): the hooks of the targets\' last hooked commits counted by phase, e.g. "1 Running, 2 Succeeded"; absent without hooks.',
  }),
  followedRef: z
    .string()
    .optional()
    .meta({ description: 'The branch or tag sourceRevision was resolved from, or "pinned" when spec.source.git.revision is a commit SHA (the Ref column).' }),
  lastAttemptedRevision: z.string().optional().meta({ description: 'The commit SHA last tried (differs from sourceRevision while it fails).' }),
  lastHandledReconcileAt: z.string().optional().meta({ description: 'The value of the syncline.dev/reconcile-requested-at annotation last handled.' }),
  appliedTargets: describe(z.number().int(), 'How many targets are Synced.').optional(),
  conditions: Conditions.optional(),
  targets: z.array(TargetStatus).optional().meta({ description: 'One line per target.' }),
  inventory: z.array(TargetInventory).optional().meta({ description: 'What is applied, per target: the source of truth for pruning.' }),
  history: z.array(HistoryEntry).optional().meta({ description: 'Revisions applied, newest first, historyLimit long (syncline rollback reads it).' }),
});

const ObjectMeta = z.object({
  name: z.string(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  generation: z.number().optional(),
  resourceVersion: z.string().optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  finalizers: z.array(z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  labels: z.record(z.string(), z.string()).optional(),
});

export const ConfigSync = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('ConfigSync'),
  metadata: ObjectMeta,
  spec: ConfigSyncSpec,
  status: ConfigSyncStatus.optional(),
});

// ManifestSync: an object that lives in the cluster, copied to other namespaces (any kind).

export const LabelSelector = z
  .object({
    matchLabels: describe(z.record(z.string(), z.string()), 'Labels that must all be present with these values.').optional(),
    matchExpressions: z
      .array(
        z.object({
          key: describe(z.string().min(1), 'The label key.'),
          operator: describe(z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']), 'How the label value is compared with values.'),
          values: describe(z.array(z.string()), 'Values for In and NotIn; empty for Exists and DoesNotExist.').optional(),
        }),
      )
      .max(20)
      .optional()
      .meta({ description: 'Label requirements that must all hold.' }),
  })
  .meta({ description: 'A Kubernetes label selector: matchLabels and matchExpressions, all of which must match.' });

export const SourceObjectReference = z.object({
  apiVersion: z.string().min(1).meta({ description: 'apiVersion of the source object, e.g. v1 or rbac.authorization.k8s.io/v1.' }),
  kind: z.string().min(1).meta({ description: 'Kind of the source object, e.g. Secret.' }),
  namespace: dnsLabel.optional().meta({
    description:
      "Namespace of the source object; default: the ManifestSync's own. Another namespace is read with serviceAccountName's rights, or only by a ManifestSync in a trusted namespace (the operator's own, --trusted-namespaces).",
  }),
  name: objectName.meta({ description: 'Name of the source object.' }),
});

export const ManifestTarget = z
  .object({
    namespace: dnsLabel.optional().meta({ description: 'Copy into this namespace.' }),
    namespaceSelector: LabelSelector.optional().meta({
      description:
        "Copy into every namespace of this cluster whose labels match (namespaces created later too). `{}` matches every namespace except kube-* ones (name those), terminating ones, ones labelled syncline.dev/mirror: disabled and the source's own (unless the copy is renamed). Without serviceAccountName, only the ManifestSync's own namespace is written unless its namespace is trusted: every other match is a Failed target (NamespaceNotAllowed).",
    }),
    cluster: LocalObjectReference.optional().meta({
      description:
        "A RemoteCluster in this namespace; omitted = this cluster. The copy is written with that cluster's credentials (its RBAC there decides); such a target names its namespace (namespaceSelector is not supported there).",
    }),
    name: objectName.optional().meta({ description: "Name of the copy; default: the source's name." }),
    patch: Values.optional().meta({ description: "A JSON merge patch applied to this target's copy, after spec.patch." }),
  })
  .meta({
    'x-kubernetes-validations': [
      { rule: 'has(self.__namespace__) != has(self.namespaceSelector)', message: 'a target names exactly one of namespace and namespaceSelector' },
    ],
  });

export const ManifestSyncSpec = z.object({
  sourceRef: SourceObjectReference.meta({ description: 'The object to copy.' }),
  targets: z.array(ManifestTarget).min(1).max(100).meta({ description: 'Where copies go.' }),
  syncPolicy: z
    .object({
      mode: z
        .enum(['Immediate', 'Interval'])
        .default('Immediate')
        .meta({ description: 'Immediate: a watch on the source updates every copy at once. Interval: copies are refreshed every interval.' }),
      interval: Interval.default('10m').meta({
        description: 'Resync period (both modes; the only trigger in Interval mode besides spec changes), from 1s to 168h.',
      }),
    })
    .prefault({})
    .meta({ description: 'When copies are refreshed.' }),
  patch: Values.optional().meta({ description: 'A JSON merge patch applied to every copy.' }),
  prune: z.boolean().default(true).meta({ description: 'Delete copies in targets that leave the list or the selector.' }),
  resourceManagementPolicy: SyncPolicy.default('Sync').meta({
    description:
      'An existing object of the same name that is not a copy of this ManifestSync: Sync and Keep leave it (reported), Adopt takes it over, Overwrite forces.',
  }),
  drift: DriftPolicy.default('Correct').meta({ description: 'Correct: a copy edited by hand is restored; Report: a condition only.' }),
  deletionPolicy: DeletionPolicy.default('Delete').meta({ description: 'Delete: copies are deleted with the ManifestSync; Orphan: they stay.' }),
  serviceAccountName: dnsLabel.optional().meta({
    description:
      "Read the source and write the copies with this ServiceAccount's rights (a token from the TokenRequest API): its RBAC decides per target. Without it, the operator's own rights apply, only inside this namespace unless the namespace is trusted (--trusted-namespaces): a copy elsewhere is a Failed target (NamespaceNotAllowed).",
  }),
  suspend: z.boolean().default(false).meta({ description: 'Stop copying; copies stay as they are.' }),
});

export const ManifestTargetStatus = z.object({
  name: z.string().meta({ description: 'The namespace (and cluster) this line is about.' }),
  namespace: describe(z.string(), 'The namespace the copy is in.').optional(),
  cluster: describe(z.string(), 'The RemoteCluster of the copy; absent = this cluster.').optional(),
  phase: describe(z.enum(['Synced', 'Failed', 'Pending']), 'Synced: the copy is current; Failed: see message; Pending: not tried yet.'),
  reason: describe(
    z.string(),
    'Why the copy failed, for machines, when a rule refused it: NamespaceNotAllowed (the ManifestSync may not write there; nothing was written).',
  ).optional(),
  objects: describe(z.number().int(), 'How many objects the target holds (0 or 1).'),
  message: describe(z.string(), 'Why the copy failed, or a notice.').optional(),
  lastSuccessfulSyncTime: Timestamp('When the copy was last written or found current.').optional(),
});

export const ManifestSyncStatus = z.object({
  observedGeneration: ObservedGeneration.optional(),
  sourceResourceVersion: z.string().optional().meta({ description: 'resourceVersion of the source object last copied.' }),
  lastSyncedTime: Timestamp('When a copy last changed.').optional(),
  conditions: Conditions.optional(),
  targets: z.array(ManifestTargetStatus).optional().meta({ description: 'One line per target namespace (and cluster).' }),
  inventory: z.array(TargetInventory).optional().meta({ description: 'The copies applied, per target namespace: the source of truth for pruning.' }),
});

export const ManifestSync = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('ManifestSync'),
  metadata: ObjectMeta,
  spec: ManifestSyncSpec,
  status: ManifestSyncStatus.optional(),
});

// RemoteCluster: credentials for another cluster, named by targets in the same namespace.

export const SecretKeyReference = z.object({
  name: objectName.meta({ description: 'A Secret in the same namespace.' }),
  key: z.string().min(1).meta({ description: 'The key within the Secret.' }),
});

export const RemoteClusterSpec = z
  .object({
    kubeconfigSecretRef: SecretKeyReference.optional().meta({
      description:
        'A kubeconfig in a Secret of this namespace. Refused, never run: exec and auth-provider users, file references, insecure-skip-tls-verify (unless the operator allows it), several contexts without current-context.',
    }),
    server: z
      .string()
      .regex(/^https:\/\//, 'an https:// URL')
      .optional()
      .meta({ description: 'The API server URL (with caSecretRef and tokenSecretRef, instead of a kubeconfig).' }),
    caSecretRef: SecretKeyReference.optional().meta({ description: "The server's CA certificate (PEM) in a Secret of this namespace." }),
    tokenSecretRef: SecretKeyReference.optional().meta({
      description: 'A bearer token in a Secret of this namespace: the identity every target in that cluster writes with.',
    }),
    probeInterval: Interval.default('1m').meta({ description: 'How often the cluster is probed (and when its Secret changes), from 1s to 168h.' }),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: 'has(self.kubeconfigSecretRef) != (has(self.server) || has(self.tokenSecretRef))',
        message: 'set exactly one of kubeconfigSecretRef and server/tokenSecretRef, not both and not neither',
      },
      { rule: '!has(self.server) || has(self.tokenSecretRef)', message: 'server needs tokenSecretRef' },
    ],
  });

export const RemoteClusterStatus = z.object({
  observedGeneration: ObservedGeneration.optional(),
  conditions: Conditions.optional(),
  serverVersion: z.string().optional().meta({ description: 'The version the API server reported at the last successful probe.' }),
  server: z.string().optional().meta({ description: 'The API server URL in use.' }),
  lastProbeTime: Timestamp(
    'When a probe last found something new (reachability, version, server); an unchanged probe writes nothing. Probes run every probeInterval.',
  ).optional(),
});

export const RemoteCluster = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('RemoteCluster'),
  metadata: ObjectMeta,
  spec: RemoteClusterSpec,
  status: RemoteClusterStatus.optional(),
});

// NamespaceReplication: a whole namespace kept warm in a standby cluster, with failover and failback.

export const NamespaceReplicationSpec = z.object({
  sourceNamespace: dnsLabel.optional().meta({
    description:
      "The namespace to replicate; default: the NamespaceReplication's own. Another namespace only from a trusted namespace (the operator's own, --trusted-namespaces).",
  }),
  destination: z
    .object({
      cluster: LocalObjectReference.optional().meta({ description: 'A RemoteCluster in this namespace (the standby); omitted = this cluster.' }),
      namespace: dnsLabel.optional().meta({
        description:
          'The namespace in the standby; default: the source namespace name. A standby in this cluster (no cluster) is another namespace: only from a trusted namespace (NamespaceNotAllowed otherwise).',
      }),
    })
    .meta({ description: 'Where the standby copy lives.' }),
  resourceTypes: z.array(z.string().min(1).max(253)).max(100).optional().meta({
    description: 'Kinds to replicate as Kind.group (Deployment.apps, ConfigMap, Widget.example.com); default: workloads, config, network and RBAC kinds.',
  }),
  exclude: z
    .array(
      z.object({
        kind: describe(z.string().min(1), 'Kind (Kind or Kind.group) of the objects to skip.'),
        name: describe(objectName, 'Name of the object to skip; omitted = every object of the kind.').optional(),
      }),
    )
    .max(100)
    .optional()
    .meta({ description: 'Objects never replicated: a kind, or a kind and name. Objects labelled syncline.dev/dr: exclude are never replicated either.' }),
  mode: z
    .enum(['Continuous', 'Interval'])
    .default('Continuous')
    .meta({ description: 'Continuous: watches the source namespace, a change reaches the standby within about a second. Interval: relists every interval.' }),
  interval: Interval.default('5m').meta({
    description: 'Relist period (the only trigger in Interval mode; a safety net in Continuous mode), from 1s to 168h.',
  }),
  prune: z.boolean().default(true).meta({ description: 'Delete from the standby what was deleted in the source (a mass deletion is held: see pruneGuard).' }),
  pruneGuard: z
    .object({
      maxDeletions: z
        .string()
        .regex(/^([0-9]{1,9}|(100|[1-9]?[0-9])%)$/, 'a count such as "10" or a percentage such as "25%"')
        .default('25%')
        .meta({
          description:
            'The most standby objects that may be deleted within `window` without a confirmation: a count ("10") or a percentage of the objects replicated ("25%" of what the standby held when the window began, rounded down, at least 1). "0" holds every deletion. More is a mass deletion and is held.',
        }),
      window: Duration.default('10m').meta({
        description:
          'Deletions made within this long count together toward maxDeletions, so a source emptied slowly (one object every few seconds) is held like one emptied at once. "0s": each pass is counted alone. A confirmed or released hold starts the count afresh.',
      }),
      delay: Duration.optional().meta({
        description:
          'A held deletion goes ahead on its own once it has been held this long (unchanged). Omitted: it waits for a confirmation (spec.confirmPrune) however long.',
      }),
    })
    .prefault({})
    .meta({
      description:
        'Deletions the standby does not mirror at once: more than maxDeletions within window, or any deletion while the source namespace is being deleted or is gone, is held (condition PruneHeld, a Warning Event) until confirmed or until delay passes. Updates keep flowing meanwhile.',
    }),
  confirmPrune: z.string().max(64).optional().meta({
    description:
      'Confirms a held deletion: the token of status.pruneHold (syncline confirm-prune NAME sets it). Exactly that held set is deleted; if the set changed since, it is held again under a new token.',
  }),
  workloads: z
    .object({
      replicas: z
        .enum(['Zero', 'Keep'])
        .default('Zero')
        .meta({ description: 'Zero: Deployments and StatefulSets land with 0 replicas (count in syncline.dev/original-replicas). Keep: as in the source.' }),
    })
    .prefault({})
    .meta({ description: 'How workloads land in the standby.' }),
  storageClassMap: z
    .record(z.string(), z.string())
    .optional()
    .meta({ description: 'PersistentVolumeClaim storage classes renamed in the standby (source class → standby class).' }),
  services: z
    .object({
      nodePorts: z
        .enum(['Drop', 'Keep'])
        .default('Drop')
        .meta({ description: "Drop: Services land without nodePorts (they may collide with the standby's own)." }),
    })
    .prefault({})
    .meta({ description: 'How Services land in the standby.' }),
  failover: z.boolean().default(false).meta({
    description:
      'true: stop replicating, scale the standby workloads to their recorded counts and resume CronJobs (syncline failover). false again: replicate, workloads back at zero (syncline failback).',
  }),
  suspend: z.boolean().default(false).meta({ description: 'Stop replicating; the standby stays as it is.' }),
});

export const NamespaceReplicationStatus = z.object({
  observedGeneration: ObservedGeneration.optional(),
  conditions: Conditions.optional(),
  lastSyncedTime: Timestamp('When the standby last changed to match the source.').optional(),
  failedOverAt: Timestamp('When the standby was promoted (spec.failover); cleared by failback.').optional(),
  standbyPromotion: z
    .object({
      at: Timestamp('When the standby was promoted.'),
      by: describe(z.string(), 'Who or what promoted it (a person, the CLI, an automatic failover).'),
    })
    .optional()
    .meta({
      description:
        'Set while replication is fenced: the standby namespace was promoted from the standby side (syncline.dev/promoted-at on it), so nothing is replicated over it until it is reset.',
    }),
  kinds: z
    .array(z.object({ kind: describe(z.string(), 'Kind (Kind.group) of the objects.'), objects: describe(z.number().int(), 'How many are in the standby.') }))
    .optional()
    .meta({ description: 'Objects replicated, by kind.' }),
  failed: z
    .array(z.object({ id: describe(z.string(), 'The object: group/Kind/namespace/name.'), reason: describe(z.string(), 'Why it could not be replicated.') }))
    .optional()
    .meta({ description: 'Objects that could not be replicated, with the reason (at most 20).' }),
  inventory: z.array(TargetInventory).optional().meta({ description: 'What is applied in the standby: the source of truth for pruning.' }),
  pruneHold: z
    .object({
      token: describe(z.string(), 'Names exactly this held set: spec.confirmPrune set to it confirms the deletion.'),
      since: Timestamp('When this set was first held.'),
      objects: describe(z.number().int(), 'How many standby objects the held deletion would remove.'),
      reason: describe(
        z.enum(['MassDeletion', 'SourceNamespaceDeleted']),
        'MassDeletion: more than spec.pruneGuard.maxDeletions within spec.pruneGuard.window; SourceNamespaceDeleted: the source namespace is being deleted or is gone.',
      ),
    })
    .optional()
    .meta({ description: 'A deletion held back from the standby (see spec.pruneGuard); absent when none is held.' }),
  recentDeletions: z
    .array(
      z.object({
        at: Timestamp('When the pass deleted them.'),
        objects: describe(z.number().int(), 'How many standby objects that pass deleted.'),
      }),
    )
    .optional()
    .meta({
      description: 'Unconfirmed deletions from the standby within spec.pruneGuard.window, oldest first: they count toward maxDeletions with the next pass.',
    }),
  excludedCredentials: z
    .number()
    .int()
    .optional()
    .meta({ description: 'Secrets of the source namespace the operator uses as credentials (RemoteCluster, Git, webhook secrets): never replicated.' }),
});

export const NamespaceReplication = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('NamespaceReplication'),
  metadata: ObjectMeta,
  spec: NamespaceReplicationSpec,
  status: NamespaceReplicationStatus.optional(),
});

// NamespaceReplicationPolicy: one NamespaceReplication per namespace a label selector matches, kept by the
// policy (created for namespaces that start to match, removed when they stop: the standby data stays).

export const NamespaceMapping = z
  .object({
    prefix: z
      .string()
      .max(62)
      .regex(/^([a-z0-9]([-a-z0-9]*)?)?$/, 'lower-case letters, digits and dashes, starting with a letter or digit')
      .optional()
      .meta({ description: 'Put before the source namespace name to make the standby name (e.g. "dr-": shop → dr-shop).' }),
    suffix: z
      .string()
      .max(62)
      .regex(/^(([-a-z0-9]*[a-z0-9])?)$/, 'lower-case letters, digits and dashes, ending with a letter or digit')
      .optional()
      .meta({ description: 'Put after the source namespace name to make the standby name (e.g. "-dr": shop → shop-dr).' }),
    names: z.record(dnsLabel, dnsLabel).optional().meta({ description: 'Explicit source → standby names; a namespace listed here ignores prefix and suffix.' }),
  })
  .meta({
    description:
      'How a source namespace is named in the standby. Omitted: the same name. A name that is not a DNS label (over 63 characters) is reported for that namespace and nothing is created for it.',
  });

/** A NamespaceReplication's spec as a policy stamps it: the source and standby namespaces come from the policy. */
export const NamespaceReplicationTemplate = NamespaceReplicationSpec.omit({ sourceNamespace: true, destination: true, failover: true, confirmPrune: true })
  .extend({
    destination: z
      .object({
        cluster: LocalObjectReference.optional().meta({
          description: "A RemoteCluster in the policy's namespace (the standby); omitted = this cluster (then namespaceMapping must rename).",
        }),
      })
      .prefault({})
      .meta({ description: 'The standby cluster; the standby namespace comes from namespaceMapping.' }),
  })
  .meta({
    description:
      "The spec of each NamespaceReplication the policy creates (as a NamespaceReplication's, without sourceNamespace, destination.namespace, failover and confirmPrune: failover and confirmPrune are set per replication, by syncline failover and syncline confirm-prune). The policy owns these fields: an edit of a replication it created is put back.",
  });

export const NamespaceReplicationPolicySpec = z.object({
  namespaceSelector: LabelSelector.meta({
    description:
      'The namespaces to replicate (e.g. matchLabels: {dr: gold}), including namespaces created or labelled later. A namespace that stops matching loses its NamespaceReplication; its standby stays as it is.',
  }),
  namespaceMapping: NamespaceMapping.optional(),
  template: NamespaceReplicationTemplate.prefault({}),
  suspend: z.boolean().default(false).meta({ description: 'Stop creating and removing NamespaceReplications; the ones created keep replicating.' }),
});

export const NamespaceReplicationPolicyStatus = z.object({
  observedGeneration: ObservedGeneration.optional(),
  conditions: Conditions.optional(),
  matched: z.number().int().optional().meta({ description: 'Namespaces the selector matches.' }),
  ready: z.number().int().optional().meta({ description: 'Of those, how many replications are Ready.' }),
  promoted: z.number().int().optional().meta({ description: 'Of those, how many standbys were promoted from the standby side (replication fenced off).' }),
  oldestChange: Timestamp("The oldest of the namespaces' last replicated changes: the worst recovery point across them.").optional(),
  namespaces: z
    .array(
      z.object({
        namespace: describe(z.string(), 'The source namespace.'),
        standbyNamespace: describe(z.string(), 'Its name in the standby (namespaceMapping).').optional(),
        replication: describe(z.string(), "The NamespaceReplication that replicates it, in the policy's namespace.").optional(),
        ready: describe(z.string(), "Its Ready condition's status (True, False, Unknown).").optional(),
        lastChange: Timestamp('When its standby last changed to match the source.').optional(),
        promotedAt: Timestamp('When its standby was promoted from the standby side (replication fenced off).').optional(),
        message: describe(z.string(), 'Why it is not replicated, or what its replication says when not Ready.').optional(),
      }),
    )
    .optional()
    .meta({ description: 'One line per matched namespace (at most 500, sorted by name).' }),
  inventory: z
    .array(
      z.object({
        replication: describe(z.string(), 'Name of the NamespaceReplication.'),
        uid: describe(z.string(), 'Its uid when created.'),
        namespace: describe(z.string(), 'The source namespace it replicates.'),
      }),
    )
    .optional()
    .meta({ description: 'The NamespaceReplications this policy created: the only ones it updates or removes.' }),
});

export const NamespaceReplicationPolicy = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('NamespaceReplicationPolicy'),
  metadata: ObjectMeta,
  spec: NamespaceReplicationPolicySpec,
  status: NamespaceReplicationPolicyStatus.optional(),
});

export type NamespaceMapping = z.infer<typeof NamespaceMapping>;
export type NamespaceReplicationTemplate = z.infer<typeof NamespaceReplicationTemplate>;
export type NamespaceReplicationPolicySpec = z.infer<typeof NamespaceReplicationPolicySpec>;
export type NamespaceReplicationPolicyStatus = z.infer<typeof NamespaceReplicationPolicyStatus>;
export type NamespaceReplicationPolicy = z.infer<typeof NamespaceReplicationPolicy>;

export type Duration = z.infer<typeof Duration>;
export type GitSource = z.infer<typeof GitSource>;
export type ValuesFromSource = z.infer<typeof ValuesFromSource>;
export type TargetPatch = z.infer<typeof TargetPatch>;
export type DataMode = z.infer<typeof DataMode>;
export type Target = z.infer<typeof Target>;
export type SyncPolicy = z.infer<typeof SyncPolicy>;
export type DriftPolicy = z.infer<typeof DriftPolicy>;
export type DeletionPolicy = z.infer<typeof DeletionPolicy>;
export type ConfigSyncSpec = z.infer<typeof ConfigSyncSpec>;
export type ConditionType = z.infer<typeof ConditionType>;
export type Condition = z.infer<typeof Condition>;
export type TargetHealth = z.infer<typeof TargetHealth>;
export type TargetStatus = z.infer<typeof TargetStatus>;
export type HookStatus = z.infer<typeof HookStatus>;
export type TargetInventory = z.infer<typeof TargetInventory>;
export type HistoryEntry = z.infer<typeof HistoryEntry>;
export type ConfigSyncStatus = z.infer<typeof ConfigSyncStatus>;
export type ConfigSync = z.infer<typeof ConfigSync>;
export type LabelSelector = z.infer<typeof LabelSelector>;
export type SourceObjectReference = z.infer<typeof SourceObjectReference>;
export type ManifestTarget = z.infer<typeof ManifestTarget>;
export type ManifestSyncSpec = z.infer<typeof ManifestSyncSpec>;
export type ManifestTargetStatus = z.infer<typeof ManifestTargetStatus>;
export type ManifestSyncStatus = z.infer<typeof ManifestSyncStatus>;
export type ManifestSync = z.infer<typeof ManifestSync>;
export type SecretKeyReference = z.infer<typeof SecretKeyReference>;
export type RemoteClusterSpec = z.infer<typeof RemoteClusterSpec>;
export type RemoteClusterStatus = z.infer<typeof RemoteClusterStatus>;
export type RemoteCluster = z.infer<typeof RemoteCluster>;
export type NamespaceReplicationSpec = z.infer<typeof NamespaceReplicationSpec>;
export type NamespaceReplicationStatus = z.infer<typeof NamespaceReplicationStatus>;
export type NamespaceReplication = z.infer<typeof NamespaceReplication>;

// Notifications: a NotificationProvider says where messages go (chat, a webhook, a Git forge's commit status); a
// NotificationAlert says which objects' events go there. The names are not Flux's Provider and Alert: kubectl
// resolves a plural or short name to one kind, and the same plural in two API groups makes `kubectl get alerts`
// list whichever it finds first.
// The operator sends what it already records as Events, from memory.

export const ProviderType = z.enum(['slack', 'msteams', 'discord', 'webhook', 'github', 'gitlab', 'gitea', 'forgejo', 'bitbucket']).meta({
  description:
    'Where messages go: slack (incoming webhook, or chat.postMessage with a bot token), msteams (a Workflows webhook, Adaptive Card), discord (webhook), webhook (JSON, or a Handlebars template body; HMAC-SHA256 signed when the Secret has hmacKey), or a commit status on github, gitlab, gitea, forgejo or bitbucket.',
});

export const COMMIT_STATUS_PROVIDERS = ['github', 'gitlab', 'gitea', 'forgejo', 'bitbucket'] as const;

/** Bounds of a batch window: long enough to gather a commit's events, short enough that a message is not stale. */
export const BATCH_WINDOW_BOUNDS = { min: '100ms', max: '10m' } as const;

const BatchWindow = Duration.meta({
  description: `A duration from ${BATCH_WINDOW_BOUNDS.min} to ${BATCH_WINDOW_BOUNDS.max}.`,
  'x-kubernetes-validations': [
    {
      rule: `duration(self) >= duration('${BATCH_WINDOW_BOUNDS.min}') && duration(self) <= duration('${BATCH_WINDOW_BOUNDS.max}')`,
      message: `must be between ${BATCH_WINDOW_BOUNDS.min} and ${BATCH_WINDOW_BOUNDS.max}`,
    },
  ],
});

export const ProviderBatch = z.object({
  window: BatchWindow.default('2s').meta({
    description: `How long a batch gathers events, from its first (${BATCH_WINDOW_BOUNDS.min} to ${BATCH_WINDOW_BOUNDS.max}).`,
  }),
  maxEvents: z
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(100)
    .meta({ description: 'A batch is sent as soon as it holds this many events, before its window ends.' }),
});

export const ProviderSpec = z
  .object({
    type: ProviderType,
    address: z
      .string()
      .max(2048)
      .regex(/^https?:\/\//, 'an http:// or https:// URL')
      .optional()
      .meta({
        description:
          "Chat and webhook types: the URL to post to. A webhook URL is a credential (whoever has it may post): prefer the Secret's address key, which wins. Commit status types: the forge's API base (e.g. https://git.example.com/api/v1); default: derived from each ConfigSync's repository URL.",
      }),
    channel: z
      .string()
      .max(200)
      .optional()
      .meta({ description: 'Slack: the channel chat.postMessage posts to (with a token), or the channel an incoming webhook should use if it may.' }),
    username: z.string().max(200).optional().meta({ description: 'Slack and Discord: the name the message is posted under, where the webhook allows it.' }),
    secretRef: LocalObjectReference.optional().meta({
      description:
        "A Secret in the same namespace: address (the webhook URL), token (Slack bot token; the forge token for commit statuses), hmacKey (webhook type: signs the body), username and password (Bitbucket app password). Commit status types without it use the ConfigSync's own Git credentials (bearerToken, or password).",
    }),
    proxySecretRef: LocalObjectReference.optional().meta({
      description:
        'A Secret in the same namespace naming the forward proxy deliveries go through (an HTTP CONNECT tunnel): address (http://host:port), username and password (optional).',
    }),
    certSecretRef: LocalObjectReference.optional().meta({
      description: "A Secret in the same namespace whose ca.crt (PEM) is trusted for the receiver's https besides the system roots.",
    }),
    template: z.string().max(16_384).optional().meta({
      description:
        'webhook type: a Handlebars template for the body instead of the JSON event (context: the event: kind, namespace, name, severity, reason, category, message, revision, summary, recovered, timestamp). Rendered with noEscape: quote values yourself ({{json message}} writes a JSON string).',
    }),
    contentType: z.string().max(200).optional().meta({ description: 'webhook type with a template: the Content-Type of the body (default application/json).' }),
    rateLimit: z
      .object({
        messages: z
          .number()
          .int()
          .min(1)
          .max(10_000)
          .default(20)
          .meta({ description: 'Messages this NotificationProvider sends per interval at most; more wait in the queue (and are dropped when it is full).' }),
        interval: Interval.default('1m').meta({ description: 'The interval of messages, from 1s to 168h.' }),
      })
      .optional()
      .meta({ description: 'How fast this NotificationProvider sends (default 20 messages per minute).' }),
    timeout: Duration.default('15s').meta({ description: 'How long one delivery attempt may take.' }),
    batch: ProviderBatch.optional().meta({
      description:
        "Send this NotificationProvider's events in batches instead of one request per event (the default, as Flux's notification-controller and Argo CD do). The first event opens a window; its batch is sent when the window ends or it holds maxEvents, in the type's own form: webhook a JSON array of the event objects (signed as one body), discord up to 10 embeds per message, slack several blocks in one message, msteams one Adaptive Card with a section per event. A batch larger than the receiver takes (Discord 10 embeds and 6,000 characters, Slack 50 blocks, Teams 28 KB) goes as several requests. rateLimit counts requests. Not with a template, nor for commit statuses.",
    }),
    suspend: z.boolean().default(false).meta({ description: 'Send nothing while true (events meanwhile are not kept).' }),
  })
  .meta({
    'x-kubernetes-validations': [
      { rule: "!has(self.template) || self.type == 'webhook'", message: 'template is for the webhook type only' },
      { rule: '!has(self.batch) || !has(self.template)', message: 'batch is not available with a template (a template words one event)' },
      { rule: "!has(self.batch) || self.type in ['slack', 'msteams', 'discord', 'webhook']", message: 'batch is for the chat and webhook types' },
    ],
  });

export const ProviderStatus = z.object({
  observedGeneration: ObservedGeneration.optional(),
  conditions: Conditions.optional(),
});

export const NotificationProvider = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('NotificationProvider'),
  metadata: ObjectMeta,
  spec: ProviderSpec,
  status: ProviderStatus.optional(),
});

/** What a NotificationAlert can ask for: a category of the operator's events, or an exact Event reason. */
export const EventCategory = z.enum(['Applied', 'Failed', 'DriftCorrected', 'HealthDegraded', 'Failover', 'Recovered', 'HookFailed']);

export const EventSource = z.object({
  kind: z
    .enum(['ConfigSync', 'ManifestSync', 'NamespaceReplication', 'RemoteCluster', '*'])
    .meta({ description: "The kind whose events are sent, or '*' for every kind the operator records events of." }),
  name: z.string().min(1).max(253).default('*').meta({ description: "The object's name, or '*' (default) for every object of the kind." }),
  namespace: dnsLabel.optional().meta({
    description:
      "The objects' namespace; default: the NotificationAlert's own. Another namespace only from a trusted namespace (the operator's own, --trusted-namespaces); otherwise the source matches nothing and the NotificationAlert says so.",
  }),
  matchLabels: describe(z.record(z.string(), z.string()), 'Only objects with all of these labels.').optional(),
});

export const AlertSpec = z.object({
  providerRef: LocalObjectReference.meta({ description: 'The NotificationProvider in the same namespace that sends the messages.' }),
  eventSources: z.array(EventSource).min(1).max(50).meta({ description: 'Which objects: any source that matches sends the event.' }),
  eventSeverity: z
    .enum(['info', 'error'])
    .default('info')
    .meta({ description: 'info: every event (Normal and Warning); error: only Warnings (and recoveries from them).' }),
  eventReasons: z.array(z.string().min(1).max(128)).max(50).optional().meta({
    description:
      "Which events: categories (Applied, Failed, DriftCorrected, HealthDegraded, Failover, Recovered) or exact Event reasons (e.g. RenderFailed); default: all. Commit status NotificationProviders read the sync's status instead and ignore this.",
  }),
  summary: z
    .string()
    .max(1024)
    .optional()
    .meta({ description: 'A line added to every message of this NotificationAlert (e.g. the cluster or the team to call).' }),
  suspend: z.boolean().default(false).meta({ description: 'Send nothing for this NotificationAlert while true.' }),
});

export const AlertStatus = z.object({
  observedGeneration: ObservedGeneration.optional(),
  conditions: Conditions.optional(),
});

export const NotificationAlert = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('NotificationAlert'),
  metadata: ObjectMeta,
  spec: AlertSpec,
  status: AlertStatus.optional(),
});

export type ProviderType = z.infer<typeof ProviderType>;
export type ProviderSpec = z.infer<typeof ProviderSpec>;
export type ProviderBatch = z.infer<typeof ProviderBatch>;
export type NotificationProvider = z.infer<typeof NotificationProvider>;
export type EventCategory = z.infer<typeof EventCategory>;
export type EventSource = z.infer<typeof EventSource>;
export type AlertSpec = z.infer<typeof AlertSpec>;
export type NotificationAlert = z.infer<typeof NotificationAlert>;

/** The CRDs this module defines, for the generator: one entry per kind. */
export const crdDefinitions = [
  {
    kind: 'ConfigSync',
    plural: 'configsyncs',
    singular: 'configsync',
    // Not 'cs': kubectl resolves that to the built-in componentstatuses first.
    shortNames: ['csync'],
    scope: 'Namespaced',
    description: 'Keeps objects rendered from a Git repository applied to one or more namespaces and clusters.',
    specDescription: 'The repository, path and revision to follow, where to apply what it renders, and how.',
    statusDescription: 'What was applied (revision, inventory, history) and how it went (conditions, per-target lines).',
    spec: ConfigSyncSpec,
    status: ConfigSyncStatus,
    // What Flux's and Argo CD's lists show by default: ready, why not, the commit, drift, age; the rest with -o wide.
    printerColumns: [
      { name: 'Ready', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
      { name: 'Status', type: 'string', description: "The Ready condition's message.", jsonPath: ".status.conditions[?(@.type=='Ready')].message" },
      {
        name: 'Revision',
        type: 'string',
        description: 'The commit applied (short), and the one being tried when it differs.',
        jsonPath: '.status.shortRevision',
      },
      { name: 'Drifted', type: 'integer', description: 'Objects that differ from Git and were left so (drift: Report).', jsonPath: '.status.drifted' },
      { name: 'Ref', type: 'string', priority: 1, description: 'The branch or tag followed, or "pinned" for a commit SHA.', jsonPath: '.status.followedRef' },
      { name: 'Suspended', type: 'boolean', priority: 1, jsonPath: '.spec.suspend' },
      {
        name: 'Health',
        type: 'string',
        priority: 1,
        description: "The Healthy condition's reason (kstatus health of what was applied).",
        jsonPath: ".status.conditions[?(@.type=='Healthy')].reason",
      },
      {
        name: 'Hooks',
        type: 'string',
        priority: 1,
        description: 'The hooks of the last hooked commit by phase (status.hookSummary).',
        jsonPath: '.status.hookSummary',
      },
      { name: 'Full Revision', type: 'string', priority: 1, jsonPath: '.status.sourceRevision' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  },
  {
    kind: 'ManifestSync',
    plural: 'manifestsyncs',
    singular: 'manifestsync',
    shortNames: ['msync'],
    scope: 'Namespaced',
    description: 'Copies one object of the cluster (any kind) into other namespaces, and keeps the copies current.',
    specDescription: 'The object to copy, where the copies go, and how they are kept.',
    statusDescription: 'The copies made, per target namespace, and how it went.',
    spec: ManifestSyncSpec,
    status: ManifestSyncStatus,
    printerColumns: [
      { name: 'Source', type: 'string', jsonPath: '.spec.sourceRef.name' },
      { name: 'Kind', type: 'string', jsonPath: '.spec.sourceRef.kind' },
      { name: 'Ready', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
      { name: 'Status', type: 'string', priority: 1, jsonPath: ".status.conditions[?(@.type=='Ready')].message" },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  },
  {
    kind: 'RemoteCluster',
    plural: 'remoteclusters',
    singular: 'remotecluster',
    shortNames: ['rcluster'],
    scope: 'Namespaced',
    description: 'Credentials for another cluster, which ConfigSync and ManifestSync targets in this namespace name with cluster.name.',
    specDescription: 'How to reach the cluster: a kubeconfig Secret, or a server URL with token and CA Secrets.',
    statusDescription: 'Whether the cluster answers, and its version.',
    spec: RemoteClusterSpec,
    status: RemoteClusterStatus,
    printerColumns: [
      { name: 'Ready', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
      { name: 'Reason', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].reason" },
      { name: 'Version', type: 'string', jsonPath: '.status.serverVersion' },
      { name: 'Server', type: 'string', priority: 1, jsonPath: '.status.server' },
      { name: 'Last Probe', type: 'date', jsonPath: '.status.lastProbeTime' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  },
  {
    kind: 'NamespaceReplication',
    plural: 'namespacereplications',
    singular: 'namespacereplication',
    shortNames: ['nsrepl'],
    scope: 'Namespaced',
    description: 'Keeps a warm standby of a namespace in another cluster, with failover and failback.',
    specDescription: 'The namespace to replicate, the standby, what is replicated and how it lands.',
    statusDescription: 'What the standby holds and when it last changed.',
    spec: NamespaceReplicationSpec,
    status: NamespaceReplicationStatus,
    printerColumns: [
      { name: 'Source', type: 'string', jsonPath: '.spec.sourceNamespace' },
      { name: 'Cluster', type: 'string', jsonPath: '.spec.destination.cluster.name' },
      { name: 'Mode', type: 'string', jsonPath: '.spec.mode' },
      { name: 'Ready', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
      { name: 'Failed Over', type: 'string', jsonPath: ".status.conditions[?(@.type=='FailedOver')].status" },
      { name: 'Held', type: 'integer', description: 'Standby objects whose deletion is held for a confirmation.', jsonPath: '.status.pruneHold.objects' },
      {
        name: 'Last Change',
        type: 'date',
        description: 'Age of the last change replicated to the standby: the recovery point (RPO) as this cluster knows it.',
        jsonPath: '.status.lastSyncedTime',
      },
      { name: 'Fenced', type: 'string', jsonPath: ".status.conditions[?(@.type=='Fenced')].status" },
      {
        name: 'Promoted',
        type: 'date',
        priority: 1,
        description: 'When the standby was promoted from the standby side (as the last fenced pass read it).',
        jsonPath: '.status.standbyPromotion.at',
      },
      { name: 'Status', type: 'string', priority: 1, jsonPath: ".status.conditions[?(@.type=='Ready')].message" },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  },
  {
    kind: 'NamespaceReplicationPolicy',
    plural: 'namespacereplicationpolicies',
    singular: 'namespacereplicationpolicy',
    shortNames: ['drpolicy'],
    scope: 'Namespaced',
    description: 'Keeps one NamespaceReplication per namespace a label selector matches (honoured only in a trusted namespace).',
    specDescription: 'Which namespaces, how they are named in the standby, and the NamespaceReplication spec for each.',
    statusDescription: 'The namespaces matched, their replications and recovery points, and the replications the policy created.',
    spec: NamespaceReplicationPolicySpec,
    status: NamespaceReplicationPolicyStatus,
    printerColumns: [
      { name: 'Cluster', type: 'string', jsonPath: '.spec.template.destination.cluster.name' },
      { name: 'Namespaces', type: 'integer', jsonPath: '.status.matched' },
      { name: 'Replicating', type: 'integer', description: 'Namespaces whose replication is Ready.', jsonPath: '.status.ready' },
      { name: 'Promoted', type: 'integer', description: 'Standbys promoted from the standby side.', jsonPath: '.status.promoted' },
      {
        name: 'Oldest Change',
        type: 'date',
        description: "The oldest of the namespaces' last replicated changes (the worst recovery point).",
        jsonPath: '.status.oldestChange',
      },
      { name: 'Ready', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
      { name: 'Status', type: 'string', priority: 1, jsonPath: ".status.conditions[?(@.type=='Ready')].message" },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  },
  {
    kind: 'NotificationProvider',
    plural: 'notificationproviders',
    singular: 'notificationprovider',
    // Not the earlier kind's nprovider: while both CRDs exist during an upgrade, a shared short name keeps the
    // later one from being served.
    shortNames: ['synprovider'],
    scope: 'Namespaced',
    description: 'Where notifications go: a chat channel, a webhook, or commit statuses on a Git forge.',
    specDescription: 'The receiver, its credentials Secret, and how fast and how long to send.',
    statusDescription: 'Whether the NotificationProvider can send (its Secrets read, its last delivery not failed).',
    spec: ProviderSpec,
    status: ProviderStatus,
    printerColumns: [
      { name: 'Type', type: 'string', jsonPath: '.spec.type' },
      { name: 'Ready', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
      { name: 'Status', type: 'string', priority: 1, jsonPath: ".status.conditions[?(@.type=='Ready')].message" },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  },
  {
    kind: 'NotificationAlert',
    plural: 'notificationalerts',
    singular: 'notificationalert',
    shortNames: ['synalert'],
    scope: 'Namespaced',
    description: 'Sends the events of chosen Syncline objects to a NotificationProvider.',
    specDescription: 'Which objects, which events, and the NotificationProvider that sends them.',
    statusDescription: 'Whether the NotificationAlert is valid and its deliveries succeed.',
    spec: AlertSpec,
    status: AlertStatus,
    printerColumns: [
      { name: 'Provider', type: 'string', jsonPath: '.spec.providerRef.name' },
      { name: 'Ready', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
      { name: 'Status', type: 'string', priority: 1, jsonPath: ".status.conditions[?(@.type=='Ready')].message" },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  },
] as const;
