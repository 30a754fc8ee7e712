{{/* Labels shared by every object. */}}
{{- define "arbiter.labels" -}}
app.kubernetes.io/name: arbiter
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: arbiter
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* Selector labels of one component: call with (list $ "server"). */}}
{{- define "arbiter.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: arbiter
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{- define "arbiter.image" -}}
{{- $root := index . 0 -}}{{- $image := index . 1 -}}
{{ $image.repository }}:{{ $image.tag | default $root.Chart.AppVersion }}
{{- end }}

{{/* The gRPC target of arbiter-server as arbiter-k8s dials it. */}}
{{- define "arbiter.serverTarget" -}}
{{- if .Values.scheduler.sidecarServer -}}
localhost:{{ .Values.server.grpcPort }}
{{- else -}}
{{ include "arbiter.serviceTarget" . }}
{{- end -}}
{{- end }}

{{/* The gRPC target of the server Deployment's headless Service. */}}
{{- define "arbiter.serviceTarget" -}}
dns:///{{ .Release.Name }}-server-grpc.{{ .Release.Namespace }}.svc.cluster.local:{{ .Values.server.grpcPort }}
{{- end }}

{{/* Pod and container security settings shared by both components. */}}
{{- define "arbiter.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "arbiter.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{/* The arbiter-server container, used by the Deployment and by the sidecar layout. */}}
{{- define "arbiter.serverContainer" -}}
{{ include "arbiter.serverContainerTLS" (list . .Values.tls.enabled) }}
{{- end }}

{{/* The arbiter-server container, with TLS on or off: call with (list $ tls). The extender's
     sidecar runs it without TLS, since arbiter-extender dials it in plain text on localhost. */}}
{{- define "arbiter.serverContainerTLS" -}}
{{- $tls := index . 1 -}}
{{- with index . 0 -}}
- name: arbiter-server
  image: {{ include "arbiter.image" (list . .Values.server.image) }}
  imagePullPolicy: {{ .Values.server.image.pullPolicy }}
  args:
    - --port={{ .Values.server.grpcPort }}
    - --metrics-port={{ .Values.server.metricsPort }}
    - --log-level={{ .Values.server.logLevel }}
    - --drain-seconds={{ .Values.server.drainSeconds }}
    - --shutdown-grace-seconds={{ .Values.server.shutdownGraceSeconds }}
    - --workers={{ .Values.server.workers }}
    - --small-lane-workers={{ .Values.server.smallLaneWorkers }}
    - --max-message-bytes={{ int64 .Values.server.maxMessageBytes }}
    - --max-decoded-bytes={{ int64 .Values.server.maxDecodedBytes }}
    - --max-queued-bytes={{ int64 .Values.server.maxQueuedBytes }}
    {{- if $tls }}
    - --tls-cert=/etc/arbiter/tls/tls.crt
    - --tls-key=/etc/arbiter/tls/tls.key
    - --tls-client-ca=/etc/arbiter/tls/ca.crt
    {{- end }}
    {{- range .Values.server.extraArgs }}
    - {{ . }}
    {{- end }}
  ports:
    - name: grpc
      containerPort: {{ .Values.server.grpcPort }}
      protocol: TCP
    - name: metrics
      containerPort: {{ .Values.server.metricsPort }}
      protocol: TCP
  {{- if not $tls }}
  livenessProbe:
    grpc:
      port: {{ .Values.server.grpcPort }}
    initialDelaySeconds: 5
    periodSeconds: 10
    failureThreshold: 3
  readinessProbe:
    grpc:
      port: {{ .Values.server.grpcPort }}
    periodSeconds: 5
    failureThreshold: 2
  {{- else }}
  livenessProbe:
    tcpSocket:
      port: grpc
    initialDelaySeconds: 5
    periodSeconds: 10
  readinessProbe:
    tcpSocket:
      port: grpc
    periodSeconds: 5
  {{- end }}
  resources:
    {{- toYaml .Values.server.resources | nindent 4 }}
  securityContext:
    {{- include "arbiter.containerSecurityContext" . | nindent 4 }}
  {{- if $tls }}
  volumeMounts:
    - name: server-tls
      mountPath: /etc/arbiter/tls
      readOnly: true
  {{- end }}
{{- end }}
{{- end }}
