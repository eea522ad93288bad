// Package http is the manifest URL source, the kubelet's --manifest-url: it
// polls one http(s) URL whose body defines this node's static pods, and
// sends the pods it defines.
//
// It owns the fetching of that URL (at once, then every CheckFrequency, one
// fetch at a time on a goroutine of its own, so that a URL that does not
// answer never holds up the report of the last fetch; the configured
// headers on every request; a 10s timeout; a body capped at 10 MiB, read no
// further than the cap) and the memory of the last good body,
// so that a bad fetch never stops the pods of an earlier good one (DESIGN.md
// rule 5).
//
// The body is one v1 Pod or a v1 PodList, YAML or JSON (manifest.LoadList).
// It is judged as a whole, as the kubelet judges it: one item that does not
// decode or validate, or two items defining the same pod (namespace and
// name), reject the whole body, and the source keeps sending the pods of the
// last good body. So do a status other than 200, a timeout, a connection
// error, an empty body and a body over the cap. Each such error is reported
// in the Update (Source "http", Origin the URL) for as long as it lasts, and
// logged once per distinct error, not at every poll.
//
// Data enters from the network and leaves as sources.Update values on the
// channel given to Run: one complete snapshot (Source "http") after the
// first fetch, even a failed one (no pods, and the error), and then one
// whenever the set of pods or the error changes, never a repeat of the last
// one. A body identical to the last one (same SHA-256) is not decoded again.
// Pods carry their static identity: a pod's UID derives from the node, the
// URL and its namespace/name, not from the body, so an edit of a pod in the
// body is an UPDATE of the same pod.
package http
