// Package prober will run the liveness, readiness and startup probes of
// running containers. What exists now is the contract with the agent's
// syncLoop: a probe worker sends a Result on the channel the syncLoop
// selects over, and the syncLoop wakes the pod's worker, which acts on it
// (restarts a container whose liveness failed, reports readiness).
package prober
