{{- define "syncline.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "syncline.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "syncline.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "syncline.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "syncline.selectorLabels" -}}
app.kubernetes.io/name: {{ include "syncline.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "syncline.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "syncline.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The namespace the operator watches: "" = all (cluster scope only). */}}
{{- define "syncline.watchNamespace" -}}
{{- if eq .Values.rbac.scope "namespace" }}
{{- if eq .Values.operator.secretAccess "namespaced" }}
{{- fail "operator.secretAccess=namespaced needs rbac.scope=cluster: with rbac.scope=namespace the operator reads Secrets in its one namespace only already (leave secretAccess at cluster)" }}
{{- end }}
{{- default .Release.Namespace .Values.operator.watchNamespace }}
{{- else if eq .Values.rbac.scope "cluster" }}
{{- .Values.operator.watchNamespace }}
{{- else }}
{{- fail (printf "rbac.scope must be cluster or namespace, not %q" .Values.rbac.scope) }}
{{- end }}
{{- end }}

{{- define "syncline.leaderElect" -}}
{{- if kindIs "invalid" .Values.leaderElection.enabled }}
{{- if gt (int .Values.replicaCount) 1 }}true{{ else }}false{{ end }}
{{- else }}
{{- if .Values.leaderElection.enabled }}true{{ else }}false{{ end }}
{{- end }}
{{- end }}

{{- define "syncline.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace }}
{{- end }}

{{/* Rules the operator needs for its own API, the Secrets/ConfigMaps ConfigSyncs reference (and mirrors) and
     events. ServiceAccount tokens are syncline.tokenRule's. */}}
{{- define "syncline.coreRules" -}}
- apiGroups: ["syncline.dev"]
  resources: ["configsyncs", "manifestsyncs", "remoteclusters", "namespacereplications", "notificationproviders", "notificationalerts"]
  verbs: ["get", "list", "watch", "patch", "update"]
- apiGroups: ["syncline.dev"]
  resources: ["configsyncs/status", "manifestsyncs/status", "remoteclusters/status", "namespacereplications/status", "notificationproviders/status", "notificationalerts/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["syncline.dev"]
  resources: ["configsyncs/finalizers", "manifestsyncs/finalizers"]
  verbs: ["update"]
{{- if eq .Values.rbac.scope "cluster" }}
# NamespaceReplicationPolicies: read them, keep their status, and create and remove the NamespaceReplications
# they stand for (only in trusted namespaces, which the operator enforces; cluster mode only: a policy watches
# every namespace).
- apiGroups: ["syncline.dev"]
  resources: ["namespacereplicationpolicies"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["syncline.dev"]
  resources: ["namespacereplicationpolicies/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["syncline.dev"]
  resources: ["namespacereplications"]
  verbs: ["create", "delete"]
{{- end }}
{{- if or (eq .Values.rbac.scope "namespace") (eq .Values.operator.secretAccess "cluster") }}
- apiGroups: [""]
  resources: ["secrets", "configmaps"]
  verbs: ["get", "list", "watch"]
{{- else }}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch"]
{{- end }}
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- if .Values.operator.dr.autoFailoverGrace }}
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "list"]
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["patch"]
{{- end }}
{{- end }}

{{/* TokenRequests for spec.serviceAccountName / operator.defaultServiceAccount: the names in
     rbac.serviceAccountTokens.names (plus the default account), or any name when the list is empty. */}}
{{- define "syncline.tokenRule" -}}
{{- $names := .Values.rbac.serviceAccountTokens.names | default list }}
{{- if and $names .Values.operator.defaultServiceAccount }}
{{- $names = append $names .Values.operator.defaultServiceAccount }}
{{- end }}
- apiGroups: [""]
  resources: ["serviceaccounts/token"]
  verbs: ["create"]
  {{- with $names }}
  resourceNames: {{ . | uniq | toJson }}
  {{- end }}
{{- end }}

{{/* The image reference: repository@digest when image.digest is set, else repository:tag. */}}
{{- define "syncline.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- end }}

{{/* The labels every operator pod carries, whatever its shard (NetworkPolicy, ServiceMonitor). */}}
{{- define "syncline.podSelectorExpressions" -}}
- key: app.kubernetes.io/instance
  operator: In
  values: [{{ .Release.Name | quote }}]
- key: app.kubernetes.io/name
  operator: In
  values: [{{ include "syncline.name" . | quote }}, {{ printf "%s-shard" (include "syncline.name" .) | quote }}]
{{- end }}

{{/* HOST:PORT for a listen flag; an IPv6 host gets brackets. Argument: (list host port). */}}
{{- define "syncline.hostPort" -}}
{{- $host := index . 0 }}{{- $port := index . 1 }}
{{- if and (contains ":" $host) (not (hasPrefix "[" $host)) }}[{{ $host }}]:{{ $port }}{{ else }}{{ $host }}:{{ $port }}{{ end }}
{{- end }}

{{/* secretAccess=namespaced: the namespaces whose Secrets the operator reads (comma-separated, sorted, unique):
     secretNamespaces, the release namespace (webhook Secret) and the watched namespace. */}}
{{- define "syncline.secretNamespaces" -}}
{{- $all := concat (list .Release.Namespace) .Values.operator.secretNamespaces }}
{{- with .Values.operator.watchNamespace }}{{ $all = append $all . }}{{ end }}
{{- $all | uniq | sortAlpha | join "," }}
{{- end }}

{{/* The named shards (values `shards`), validated: DNS labels, no duplicates, not "default". As JSON. */}}
{{- define "syncline.shards" -}}
{{- $shards := .Values.shards | default list }}
{{- range $shards }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" (toString .)) }}
{{- fail (printf "shards: %q is not a DNS label (lower-case letters, digits and '-')" (toString .)) }}
{{- end }}
{{- if eq (toString .) "default" }}
{{- fail "shards: \"default\" is the shard of the unlabelled syncs (the main Deployment); name the others" }}
{{- end }}
{{- end }}
{{- if ne (len (uniq $shards)) (len $shards) }}
{{- fail "shards: a shard is named twice" }}
{{- end }}
{{- toJson $shards }}
{{- end }}

{{/* A shard's Deployment (and Service, PDB) name: the release's, with -shard-<name> for a named shard. */}}
{{- define "syncline.shardFullname" -}}
{{- include "syncline.fullname" .root }}{{ with .shard }}-shard-{{ . }}{{ end }}
{{- end }}

{{/*
The pods of a shard. The default shard keeps the chart's selector labels; a named shard's differ in
app.kubernetes.io/name, so no two Deployments' selectors overlap (as in Flux's sharding setup).
*/}}
{{- define "syncline.shardSelectorLabels" -}}
{{- if .shard -}}
app.kubernetes.io/name: {{ include "syncline.name" .root }}-shard
app.kubernetes.io/instance: {{ .root.Release.Name }}
syncline.dev/shard: {{ .shard }}
{{- else -}}
{{ include "syncline.selectorLabels" .root }}
{{- end }}
{{- end }}

{{/*
rbac.manage.bindAndEscalate: syncs may apply Roles, ClusterRoles and bindings granting rights the operator's
own verbs do not cover (see values.yaml for what that lets a tenant do).
*/}}
{{- define "syncline.bindAndEscalateRule" -}}
{{- if .Values.rbac.manage.bindAndEscalate -}}
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "clusterroles"]
  verbs: ["bind", "escalate"]
{{- end -}}
{{- end }}
