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

{{/* The rules the operator needs, and nothing more. */}}
{{- define "ducklake-operator.rules" -}}
- apiGroups: ["ducklake.dev"]
  resources: ["ducklakecatalogs", "ducklakeschemas", "ducklaketables"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["ducklake.dev"]
  resources: ["ducklakecatalogs/status", "ducklakeschemas/status", "ducklaketables/status"]
  verbs: ["get", "patch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
# catalog credentials: each Secret a catalog names is read, then watched by name (a
# metadata.name field selector) so a rotated password is picked up
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["kopf.dev"]
  resources: ["kopfpeerings"]
  verbs: ["get", "list", "watch", "patch"]
{{- end -}}
