{{/* Names, labels and shared pieces of the carpenter chart. */}}

{{- define "carpenter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release name, plus the chart name unless the release name contains it. */}}
{{- define "carpenter.fullname" -}}
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

{{- define "carpenter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "carpenter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "carpenter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "carpenter.labels" -}}
helm.sh/chart: {{ include "carpenter.chart" . }}
{{ include "carpenter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* metadata.labels and, when set, metadata.annotations of every resource. */}}
{{- define "carpenter.metadata" -}}
labels:
  {{- include "carpenter.labels" . | nindent 2 }}
{{- with .Values.additionalAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "carpenter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "carpenter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "carpenter.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The Secret holding the --pve-config file. */}}
{{- define "carpenter.pveSecretName" -}}
{{- default (printf "%s-pve" (include "carpenter.fullname" .)) .Values.proxmox.existingSecret }}
{{- end }}

{{- define "carpenter.leaseNamespace" -}}
{{- default .Release.Namespace .Values.settings.leaderElection.namespace }}
{{- end }}

{{/* The --pve-config YAML written into the chart's Secret from proxmox.clusters. A
caCert becomes a file of the same Secret (ca-<region>.pem) named by caFile. */}}
{{- define "carpenter.pveConfig" -}}
{{- $clusters := list }}
{{- range $i, $c := .Values.proxmox.clusters }}
{{- $where := printf "proxmox.clusters[%d]" $i }}
{{- $out := dict "region" (required (printf "%s.region is required" $where) $c.region) }}
{{- $_ := set $out "url" (required (printf "%s.url is required" $where) $c.url) }}
{{- $_ := set $out "tokenID" (required (printf "%s.tokenID is required" $where) $c.tokenID) }}
{{- if and $c.tokenSecret $c.tokenSecretFile }}
{{- fail (printf "%s: set tokenSecret or tokenSecretFile, not both" $where) }}
{{- else if $c.tokenSecret }}
{{- $_ := set $out "tokenSecret" $c.tokenSecret }}
{{- else if $c.tokenSecretFile }}
{{- $_ := set $out "tokenSecretFile" $c.tokenSecretFile }}
{{- else }}
{{- fail (printf "%s: tokenSecret or tokenSecretFile is required" $where) }}
{{- end }}
{{- $verify := 0 }}
{{- if $c.caCert }}
{{- $_ := set $out "caFile" (printf "%s/ca-%s.pem" $.Values.proxmox.mountPath $c.region) }}
{{- $verify = add1 $verify }}
{{- end }}
{{- if $c.caFile }}
{{- $_ := set $out "caFile" $c.caFile }}
{{- $verify = add1 $verify }}
{{- end }}
{{- if $c.fingerprint }}
{{- $_ := set $out "fingerprint" $c.fingerprint }}
{{- $verify = add1 $verify }}
{{- end }}
{{- if $c.insecure }}
{{- $_ := set $out "insecure" true }}
{{- $verify = add1 $verify }}
{{- end }}
{{- if gt $verify 1 }}
{{- fail (printf "%s: set at most one of caCert, caFile, fingerprint and insecure" $where) }}
{{- end }}
{{- $clusters = append $clusters $out }}
{{- end }}
{{- toYaml (dict "clusters" $clusters) }}
{{- end }}

{{/* (list $ term): a pod affinity term or topology spread constraint, as YAML, with the
pods' own labels as labelSelector when it has none. */}}
{{- define "carpenter.withPodSelector" -}}
{{- $top := index . 0 }}
{{- $term := index . 1 }}
{{- if not $term.labelSelector }}
{{- $term = merge (dict "labelSelector" (dict "matchLabels" (include "carpenter.selectorLabels" $top | fromYaml))) $term }}
{{- end }}
{{- toYaml $term }}
{{- end }}
