// Package crilog adapts the logging of k8s.io/cri-client to the agent's:
// cri-client logs every failed call as an error, also failures the caller
// expects and reports itself. QuietErrors turns those into debug lines
// for the calls that ask for it.
package crilog
