// Package metrics holds the agent's Prometheus metrics in a registry of its
// own (never the global one): every component gets the Metrics value it
// writes to from its constructor, and the HTTP server serves the registry
// on /metrics. Names carry the minikubelet_ prefix.
package metrics
