// Package shutdown terminates the node's pods gracefully when the node shuts
// down, as the kubelet's GracefulNodeShutdown does (--shutdown-grace-period).
//
// It follows systemd-logind's delay inhibitor protocol over the system
// D-Bus:
//
//	connect: subscribe to PrepareForShutdown, raise logind's
//	         InhibitDelayMaxSec if it is shorter than the grace period
//	         (drop-in 99-minikubelet.conf, then SIGHUP logind through
//	         systemd), take a "delay" inhibitor lock for "shutdown"
//	          |
//	          v
//	 +---> waiting --PrepareForShutdown(true)--> terminating pods:
//	 |                                           regular pods first (grace
//	 |                                           min(own, period - critical)),
//	 |                                           then critical pods (grace
//	 |                                           min(own, critical));
//	 |                                           then close the lock's fd:
//	 |                                           the shutdown proceeds
//	 |                                                     |
//	 +--- take the lock again, start the pods again <------+
//	                     PrepareForShutdown(false): cancelled
//
// Data enters as logind's signals and property values; it leaves as
// requests to the node: stop admitting pods, kill these pods with these
// grace periods and this reason, start the pods again. NodePods is the
// agent's node: it hands each request to the syncLoop (Requests), which
// carries it out with Handle, holding pod starts and dispatching kills to
// the pod workers, and marking the killed pods' statuses. A lost bus connection is dialled again with back-off; logind's
// PreparingForShutdown property, read at every connect, catches a signal
// missed in between. When the bus or logind cannot be reached at start,
// Manager.Run logs why and returns: the agent runs on without graceful
// node shutdown.
package shutdown
