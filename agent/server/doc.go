// Package server serves the agent's HTTP endpoints on the kubelet's ports
// and paths: the read-only port (default 10255) with /pods, /healthz,
// /metrics, /stats/summary and /metrics/cadvisor (from Config.Stats; 503
// until the runtime has answered), /manifests/errors (the manifests
// refused right now, as JSON) and /debug/pprof/ (Go profiles, as the
// kubelet serves them), the streaming endpoints (stream*.go: /exec,
// /attach and /portForward proxied to the runtime's streaming server; a
// v5 WebSocket exec or attach, which the runtime does not speak, run
// against it over SPDY with internal/spdy; /run through CRI ExecSync),
// and the healthz port (default 10248) with /healthz.
//
// Data enters through the interfaces in Config (the pods and their
// statuses, the health checks, the refused manifests, the metrics) and
// leaves as JSON in the Kubernetes API's shapes or Prometheus text.
package server
