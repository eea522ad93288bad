// Package agent wires minikubelet's parts together and owns the syncLoop.
//
// Pod sources (agent/sources/...) feed the merge (agent/podconfig), whose
// ADD / UPDATE / DELETE / REMOVE / RECONCILE operations reach the syncLoop
// together with PLEG events and the periodic sync and housekeeping ticks.
// The syncLoop only dispatches (DESIGN.md rule 1): it records the pods the
// sources want and hands every piece of work to the pod's worker
// (podworkers), which does all runtime calls. The status manager
// (agent/status) and the HTTP endpoints (agent/server) report what the
// workers saw.
//
// Config comes from the kubelet's flags and, with --config, a
// KubeletConfiguration file (agent/config; flags win). Run tells a
// service manager that speaks sd_notify how the start goes, sends READY=1
// after the first full sync and pings its watchdog while the syncLoop
// turns (notify.go).
//
// Images stay out of the syncLoop: before it starts, the archives of
// <root-dir>/images are imported into the runtime (agent/imageimport), and
// image garbage collection (agent/imagegc) runs beside it in a goroutine
// of its own.
//
// Run(ctx) starts everything and returns when ctx is cancelled. Stopping the
// agent leaves the pods running, as the kubelet does. With
// --shutdown-grace-period, a shutdown of the node terminates them first:
// the shutdown manager (agent/shutdown) hands its requests to the syncLoop
// (nodeshutdown.go).
package agent
