// Package metrics holds the agent's Prometheus metrics in a registry of its
// own (never the global one): every component gets the Metrics value it
// writes to from its constructor, and the HTTP server serves the registry
// on /metrics. A metric the kubelet also has carries the kubelet's name,
// help text, labels and buckets (kubelet_*), so that dashboards and
// alerting rules written for the kubelet work; the others carry the
// minikubelet_ prefix.
package metrics
