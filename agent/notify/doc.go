// Package notify keeps a service manager that speaks sd_notify (systemd,
// Type=notify) told how the agent's start goes and whether it is alive.
//
// The messages, in the order a start sends them:
//
//	STATUS=Waiting for the container runtime at unix:///...
//	STATUS=Waiting for a first complete read of the pod sources
//	STATUS=Starting pods: 1 of 3 synced        (EXTEND_TIMEOUT_USEC while the sync loop turns)
//	READY=1 + STATUS=Running 3 pods            (the first full sync is done)
//	WATCHDOG=1 every half watchdog timeout     (only while the sync loop turns)
//	STOPPING=1                                 (ctx cancelled; pods keep running)
//
// The first full sync is done when the runtime has answered, the sync loop
// turns, the PLEG has listed the runtime, every configured source has sent
// a complete update, and every pod of the merged sources has been through
// one SyncPod of its worker (it returned, with or without an error: an
// image that cannot be pulled must not hold the agent's start forever). By
// then every sandbox and every container that could start at once was
// started. READY=1 is sent once.
//
// Data enters through small interfaces read every notifyPeriod: how the
// agent is doing (agentState: the runtime, the syncLoop's heartbeat, the
// PLEG), what the merge says of the sources, the pods the syncLoop
// dispatched, and FirstSyncs, which wraps the pod workers' syncer to
// record each pod's first SyncPod. It leaves as sd_notify messages through
// the notifier (internal/sdnotify).
package notify
