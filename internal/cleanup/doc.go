// Package cleanup makes the contexts that work done after a cancellation
// runs under: releasing a lease, closing connections, shutting servers
// down, telling the service manager that the agent stops.
//
// Such work must not inherit the cancellation that triggered it, or it
// would never run, and must not run unbounded, or a hung peer would keep
// the agent from stopping. Context is the one place such a context is
// made (STYLE.md convention 7): the parent's values (its logger, a
// containerd lease) pass through; its cancellation and deadline do not;
// the new context ends after the timeout given.
package cleanup
