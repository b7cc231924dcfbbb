{
  deployment(name, replicas, image):: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: name },
    spec: {
      replicas: replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'web', image: image }] },
      },
    },
  },
  configMap(name, data):: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: name }, data: data },
}
