package controlplane

// auditPolicy records every binding and eviction (who, which pod, the answer's code) and nothing
// else, so a test can prove that no pod was bound twice and that an eviction was refused.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create]
  resources:
  - group: ""
    resources: [pods/binding, pods/eviction]
- level: None
`

// CompleteAfterAnnotation on a pod makes kwok end it as Succeeded that long (a Go duration such
// as "3s") after it started running: how a Job's pods finish on kwok nodes.
const CompleteAfterAnnotation = "arbiter.dev/kwok-complete-after"

// kwokConfig holds the stages kwok plays: a managed node becomes Ready with the capacity it was
// created with; a pod bound to one becomes Running and Ready, and Succeeded after the duration of
// its CompleteAfterAnnotation, if it has one; a pod being deleted goes at once, as a kubelet does
// once its containers have stopped.
const kwokConfig = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: arbiter-node-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
  next:
    statusTemplate: |
      {{ $t := Now }}
      conditions:
      - type: Ready
        status: "True"
        reason: KubeletReady
        message: kwok runs this node
        lastHeartbeatTime: {{ $t | Quote }}
        lastTransitionTime: {{ $t | Quote }}
      {{ with .status.allocatable }}
      allocatable:
      {{ YAML . 1 }}
      {{ end }}
      {{ with .status.capacity }}
      capacity:
      {{ YAML . 1 }}
      {{ end }}
      nodeInfo:
        architecture: amd64
        operatingSystem: linux
        kubeletVersion: kwok
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: arbiter-pod-running
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: [Pending]
  next:
    statusTemplate: |
      {{ $t := Now }}
      phase: Running
      startTime: {{ $t | Quote }}
      conditions:
      - type: PodScheduled
        status: "True"
        lastTransitionTime: {{ $t | Quote }}
      - type: Initialized
        status: "True"
        lastTransitionTime: {{ $t | Quote }}
      - type: ContainersReady
        status: "True"
        lastTransitionTime: {{ $t | Quote }}
      - type: Ready
        status: "True"
        lastTransitionTime: {{ $t | Quote }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $t | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: arbiter-pod-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: [Running]
    - key: '.metadata.annotations["` + CompleteAfterAnnotation + `"]'
      operator: Exists
  delay:
    durationMilliseconds: 1000
    durationFrom:
      expressionFrom: '.metadata.annotations["` + CompleteAfterAnnotation + `"]'
  next:
    statusTemplate: |
      {{ $t := Now }}
      phase: Succeeded
      conditions:
      - type: Ready
        status: "False"
        reason: PodCompleted
        lastTransitionTime: {{ $t | Quote }}
      - type: ContainersReady
        status: "False"
        reason: PodCompleted
        lastTransitionTime: {{ $t | Quote }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: false
        started: false
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            reason: Completed
            finishedAt: {{ $t | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: arbiter-pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: Exists
  next:
    delete: true
`
