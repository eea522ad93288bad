// Package probe runs the checks behind Kubernetes probes and lifecycle
// handlers: a command in the container (CRI ExecSync), an HTTP GET, a TCP
// connect and a gRPC health check. It holds no state beyond an HTTP client
// and knows nothing of thresholds or periods: agent/prober schedules probes
// and counts results, podworkers runs lifecycle hooks with the same
// handlers.
//
// Each check returns a Result and a short detail for logs and events.
// Success and Failure are the probed program's answer; Unknown means the
// check could not be made (the runtime failed, a port name does not
// resolve) and says nothing about the program.
package probe
