{{/*
What `meshcni manifests` renders, as Helm templates: test/chart checks them equal, object by
object, for every option. Names are fixed (one meshcni per cluster): they are cluster-wide.
*/}}

{{/*
Linkerd's names (linkerdNames, or a release named linkerd-cni: linkerd2-cni's chart swapped
for this one): the agent's objects linkerd-cni, its ConfigMap linkerd-cni-config, every object
labelled linkerd.io/cni-resource, its entry and binary linkerd-cni, its kubeconfig
ZZZ-linkerd-cni-kubeconfig: what `linkerd check` gets (meshcni manifests --linkerd-names).
*/}}
{{- define "meshcni.linkerdNames" -}}
{{- if or .Values.linkerdNames (eq .Release.Name "linkerd-cni") }}true{{ end -}}
{{- end }}

{{/* The name of the agent's ServiceAccount, roles and DaemonSet, and its entry's type. */}}
{{- define "meshcni.agentName" -}}
{{- if include "meshcni.linkerdNames" . }}linkerd-cni{{ else }}meshcni{{ end -}}
{{- end }}

{{/* The labels on every object: meshcni's, the operator's commonLabels, Helm's. */}}
{{- define "meshcni.labels" -}}
app.kubernetes.io/name: meshcni
app.kubernetes.io/part-of: meshcni
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- if include "meshcni.linkerdNames" . }}
linkerd.io/cni-resource: "true"
{{- end }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* The labels on the agent's pods: meshcni's, commonLabels, podLabels (not Helm's: a chart's version is no reason to restart). */}}
{{- define "meshcni.podLabels" -}}
app.kubernetes.io/name: meshcni
app.kubernetes.io/part-of: meshcni
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- if include "meshcni.linkerdNames" . }}
linkerd.io/cni-resource: "true"
{{- end }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- with .Values.podLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The agent's and the plugin's log level: Linkerd's trace is meshcni's debug. */}}
{{- define "meshcni.logLevel" -}}
{{- if eq .Values.logLevel "trace" }}debug{{ else }}{{ .Values.logLevel }}{{ end -}}
{{- end }}

{{/* The startup taint's key and effect (the agent's reading: effect NoSchedule when none is given), as a dict. */}}
{{- define "meshcni.startupTaint" -}}
{{- $taint := .Values.startupTaint -}}
{{- $effect := "NoSchedule" -}}
{{- if contains ":" $taint }}{{ $effect = regexReplaceAll "^.*:" $taint "" }}{{ end -}}
{{- toJson (dict "key" (regexReplaceAll "[=:].*$" $taint "") "effect" $effect) -}}
{{- end }}

{{/* A comma-separated port list ("25, 8000-9000", or one number) as strings, trimmed. */}}
{{- define "meshcni.portList" -}}
{{- $ports := list -}}
{{- range splitList "," (toString .) }}{{ if trim . }}{{ $ports = append $ports (trim .) }}{{ end }}{{ end -}}
{{- toJson $ports -}}
{{- end }}

{{/* The netconf entry the agent chains (CNI_NETWORK_CONFIG): linkerd2-cni's values, then .Values.netconf over them. */}}
{{- define "meshcni.netconf" -}}
{{- $v := .Values -}}
{{- $redirect := list -}}
{{- range fromJsonArray (include "meshcni.portList" $v.portsToRedirect) }}{{ $redirect = append $redirect (atoi .) }}{{ end -}}
{{- $inbound := concat (list (toString $v.proxyAdminPort) (toString $v.proxyControlPort)) (fromJsonArray (include "meshcni.portList" $v.ignoreInboundPorts)) -}}
{{- $linkerd := dict "incoming-proxy-port" $v.inboundProxyPort "outgoing-proxy-port" $v.outboundProxyPort "proxy-uid" $v.proxyUID
  "ports-to-redirect" $redirect "inbound-ports-to-ignore" $inbound "simulate" false "use-wait-flag" $v.useWaitFlag
  "iptables-mode" $v.iptablesMode "ipv6" (not $v.disableIPv6) -}}
{{- if ge (int $v.proxyGID) 0 }}{{ $_ := set $linkerd "proxy-gid" $v.proxyGID }}{{ end -}}
{{- if $v.ignoreOutboundPorts }}{{ $_ := set $linkerd "outbound-ports-to-ignore" (fromJsonArray (include "meshcni.portList" $v.ignoreOutboundPorts)) }}{{ end -}}
{{- $linkerd = merge (deepCopy $v.netconf) $linkerd -}}
{{- dict "name" (include "meshcni.agentName" .) "type" (include "meshcni.agentName" .) "log_level" (include "meshcni.logLevel" .) "kubernetes" (dict "kubeconfig" "__KUBECONFIG_FILEPATH__") "linkerd" $linkerd | toPrettyJson -}}
{{- end }}

{{/* Whether the values name Linkerd's plugin image (a linkerd2-cni values file does): it cannot run meshcni's agent. */}}
{{- define "meshcni.linkerdImage" -}}
{{- if regexMatch "(^|/)linkerd/cni-plugin$" .Values.image.name }}true{{ end -}}
{{- end }}

{{/* The agent's image: meshcni's (at the chart's appVersion) where the values name Linkerd's. */}}
{{- define "meshcni.image" -}}
{{- if include "meshcni.linkerdImage" . -}}
ghcr.io/meshcni/meshcni:{{ .Chart.AppVersion }}
{{- else -}}
{{ .Values.image.name }}:{{ .Values.image.version | default .Chart.AppVersion }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- end }}
{{- end }}

{{/* Values that cannot mean what they meant for linkerd2-cni: refused by name (NOTES.txt names the ones only warned about). */}}
{{- define "meshcni.refuse" -}}
{{- if .Values.enablePSP }}
{{- fail "enablePSP: true is refused: PodSecurityPolicy was removed in Kubernetes 1.25 (meshcni needs 1.30 or later); give meshcni's namespace the label pod-security.kubernetes.io/enforce=privileged instead" }}
{{- end }}
{{- if and .Values.evictNamespaces (ne .Values.repair "evict") }}
{{- fail "evictNamespaces needs repair: evict" }}
{{- end }}
{{- if and (eq .Values.repair "evict") (empty .Values.evictNamespaces) }}
{{- fail "repair: evict needs evictNamespaces: the namespaces the agent may evict pods in ([\"*\"]: any but the system ones)" }}
{{- end }}
{{- range .Values.evictNamespaces }}
{{- if has . (list "kube-system" "kube-public" "kube-node-lease") }}
{{- fail (printf "evictNamespaces: %s's pods are never meshed, so never evicted" .) }}
{{- end }}
{{- end }}
{{- end }}
