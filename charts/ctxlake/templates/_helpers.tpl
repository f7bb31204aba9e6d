{{/* Names, labels and shared pod pieces of the ctxlake chart. */}}

{{- define "ctxlake.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ctxlake.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ctxlake.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "ctxlake.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "ctxlake.selector" -}}
app.kubernetes.io/name: {{ include "ctxlake.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ctxlake.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ctxlake.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "ctxlake.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "ctxlake.fileStore" -}}
{{- if hasPrefix "file://" .Values.store.url -}}true{{- end -}}
{{- end -}}

{{/* Environment every role shares: where config and local state live, how to reach the store. */}}
{{- define "ctxlake.env" -}}
- name: CTXLAKE_HOME
  value: /var/lib/ctxlake
- name: CTXLAKE_CONFIG
  value: /etc/ctxlake/ctxlake.toml
{{- with .Values.store.s3.region }}
- name: AWS_REGION
  value: {{ . | quote }}
{{- end }}
{{- with .Values.store.s3.endpoint }}
- name: AWS_ENDPOINT_URL_S3
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{- define "ctxlake.envFrom" -}}
{{- with .Values.store.credentials.existingSecret }}
envFrom:
  - secretRef:
      name: {{ . }}
{{- end }}
{{- end -}}

{{/* Restricted-profile container security context for the role containers. */}}
{{- define "ctxlake.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{- define "ctxlake.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.podSecurityContext.runAsUser }}
runAsGroup: {{ .Values.podSecurityContext.runAsGroup }}
fsGroup: {{ .Values.podSecurityContext.fsGroup }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "ctxlake.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
