// Package containerlogs rotates the CRI log files of running containers,
// as the kubelet's container log manager does: every monitor interval, a
// container's log over MaxSize is renamed to "<log>.<timestamp>" and the
// runtime is asked to reopen it (CRI ReopenContainerLog); rotated files
// beyond MaxFiles-1 are removed, oldest first, and all but the newest
// rotated file are gzip-compressed.
//
// Data enters as the running containers the PLEG cache knows (ID and log
// path; RunningIn lists them); it leaves as renamed, compressed and removed files and
// ReopenContainerLog calls. A rotation whose reopen fails is undone, so
// that the runtime never writes to a file nobody reads.
package containerlogs
