// Package sources holds what every pod source (file, HTTP, apiserver) has in
// common: the Update a source sends and the error a source reports for one
// bad manifest. The sources themselves live in sub-packages (sources/file,
// sources/http, sources/api).
//
// A source always sends the complete set of pods it currently wants (the
// kubelet's SET semantics); the merge in agent/podconfig turns consecutive
// sets into ADD / UPDATE / REMOVE operations. A source never drops a pod
// because a new version of its manifest is bad: it keeps sending the last
// good version and reports the error beside it.
package sources
