// Package cri connects the agent to a CRI runtime. The real clients come from
// k8s.io/cri-client; this package only adds what an agent that starts before
// its runtime needs: retrying the connection with backoff until the runtime
// answers, reading the runtime's name and version, and what those say of
// features CRI cannot be asked about (image volumes).
package cri
