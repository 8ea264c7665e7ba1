{{- define "ducklake-operator.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ducklake-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ducklake-operator.labels" -}}
app.kubernetes.io/name: {{ include "ducklake-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ducklake-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ducklake-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ducklake-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ducklake-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The image of the operator, which is also the default image of its jobs. */}}
{{- define "ducklake-operator.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The service account jobs' pods run as (Spark drivers), when the chart creates it. */}}
{{- define "ducklake-operator.jobServiceAccountName" -}}
{{- default (printf "%s-job" (include "ducklake-operator.fullname" .) | trunc 63 | trimSuffix "-") .Values.jobs.serviceAccount.name -}}
{{- end -}}

{{/* The rules the operator needs, and nothing more. */}}
{{- define "ducklake-operator.rules" -}}
- apiGroups: ["ducklake.dev"]
  resources: ["ducklakecatalogs", "ducklakeschemas", "ducklaketables"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["ducklake.dev"]
  resources: ["ducklakecatalogs/status", "ducklakeschemas/status", "ducklaketables/status"]
  verbs: ["get", "patch"]
# maintenance: policies create their runs and delete old ones
- apiGroups: ["ducklake.dev"]
  resources: ["ducklakejobs", "ducklakemaintenancepolicies"]
  verbs: ["create", "delete", "patch", "get", "list", "watch"]
- apiGroups: ["ducklake.dev"]
  resources: ["ducklakejobs/status", "ducklakemaintenancepolicies/status"]
  verbs: ["get", "patch"]
# what runs launch (owned by their DuckLakeJob): a Job or a SparkApplication, and the
# ConfigMap holding the run document
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["create", "get", "list", "watch", "delete"]
- apiGroups: ["sparkoperator.k8s.io"]
  resources: ["sparkapplications"]
  verbs: ["create", "get", "list", "watch", "delete"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["create", "get", "delete"]
# a cancelled or timed-out attempt counts as stopped only once its pods have stopped
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
# run locks (one Lease per table, per catalog slot) that survive restarts
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "create", "update", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
# no Secrets here: only those rbac.catalogSecrets names (templates/secret-rbac.yaml)
- apiGroups: ["kopf.dev"]
  resources: ["kopfpeerings"]
  verbs: ["get", "list", "watch", "patch"]
{{- end -}}
