// Package prober runs the liveness, readiness and startup probes of running
// containers, one worker goroutine per probe of each container, and keeps
// their results.
//
// Data enters as pods (AddPod, when the syncLoop admits or updates one) and
// as API pod statuses (SetPodStatus, pushed by the status manager each time
// it stores one): a worker learns from the status which container runs
// under which ID since when, and the pod's IP. Results leave two ways: the
// Result channel tells the syncLoop that a probe's outcome changed, so that
// it wakes the pod's worker; the pod worker and the status manager then read
// the outcome through Unhealthy, Started and Ready.
//
// A worker probes its container every periodSeconds, the first time
// initialDelaySeconds after the container started (not rounded up to the
// next period as in the kubelet); after an agent restart, containers that
// were already running are first probed at a random point of their first
// period, so that a hundred pods do not probe at once. A result counts once
// it repeats successThreshold (or failureThreshold) times. Liveness and
// readiness do not run while a startup probe has not yet succeeded; a
// liveness or startup failure puts the worker on hold until the container
// is replaced. An outcome the check could not establish (the runtime
// failed) changes nothing, as in the kubelet.
//
//	container seen running ──> wait initialDelay ──> probe every period
//	        ^                                             │ threshold crossed
//	        └──── new container ID <── on hold <── liveness/startup failure
package prober
