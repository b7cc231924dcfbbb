// Tekton's PipelineRun and TaskRun kinds (tekton.dev/v1) for tests, without Tekton's controller: its Go module
// is not served by the registries these tests build from, so the CRDs here follow Tekton's documented API
// (https://tekton.dev/docs/pipelines/pipelineruns/, .../taskruns/): a run reports through the Knative-style
// `Succeeded` condition (Unknown while running, True or False when done) and status.startTime/completionTime.
// The test drives that status through the status subresource, as a stand-in for Tekton's controller.

/** The CustomResourceDefinitions of tekton.dev/v1 PipelineRun and TaskRun (spec and status kept as written). */
export function tektonCrds(): Record<string, unknown>[] {
  return [crd('PipelineRun', 'pipelineruns', 'pr'), crd('TaskRun', 'taskruns', 'tr')];
}

function crd(kind: string, plural: string, shortName: string): Record<string, unknown> {
  const condition = {
    type: 'object',
    required: ['type', 'status'],
    properties: {
      type: { type: 'string' },
      status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
      reason: { type: 'string' },
      message: { type: 'string' },
      lastTransitionTime: { type: 'string' },
    },
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.tekton.dev` },
    spec: {
      group: 'tekton.dev',
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase(), shortNames: [shortName], categories: ['tekton', 'tekton-pipelines'] },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Succeeded', type: 'string', jsonPath: '.status.conditions[?(@.type=="Succeeded")].status' },
            { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Succeeded")].reason' },
            { name: 'StartTime', type: 'date', jsonPath: '.status.startTime' },
            { name: 'CompletionTime', type: 'date', jsonPath: '.status.completionTime' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                status: {
                  type: 'object',
                  'x-kubernetes-preserve-unknown-fields': true,
                  properties: {
                    conditions: { type: 'array', items: condition },
                    startTime: { type: 'string', format: 'date-time' },
                    completionTime: { type: 'string', format: 'date-time' },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
}

/** The status Tekton's controller writes for a run: started (Succeeded Unknown), succeeded or failed. */
export function tektonRunStatus(state: 'Running' | 'Succeeded' | 'Failed', startTime: Date, now: Date = new Date()): Record<string, unknown> {
  const condition =
    state === 'Running'
      ? { type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'Tasks Completed: 0 (Failed: 0, Cancelled 0), Incomplete: 1, Skipped: 0' }
      : state === 'Succeeded'
        ? { type: 'Succeeded', status: 'True', reason: 'Succeeded', message: 'Tasks Completed: 1 (Failed: 0, Cancelled 0), Skipped: 0' }
        : { type: 'Succeeded', status: 'False', reason: 'Failed', message: 'Tasks Completed: 1 (Failed: 1, Cancelled 0), Skipped: 0' };
  return {
    conditions: [{ ...condition, lastTransitionTime: now.toISOString() }],
    startTime: startTime.toISOString(),
    ...(state === 'Running' ? {} : { completionTime: now.toISOString() }),
  };
}
