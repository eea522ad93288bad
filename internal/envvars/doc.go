// Package envvars makes the Service environment variables the kubelet
// gives containers: for each Service of the pod's namespace (when the pod's
// enableServiceLinks is true) and for the default namespace's kubernetes
// Service (always), FOO_SERVICE_HOST, FOO_SERVICE_PORT, one
// FOO_SERVICE_PORT_<NAME> per named port, and the Docker link variables
// FOO_PORT, FOO_PORT_80_TCP, FOO_PORT_80_TCP_PROTO, _PORT and _ADDR.
//
// Data enters as the Services a lister holds; it leaves as a map from
// variable name to value. Nothing here does I/O; every function is safe
// for concurrent use.
package envvars
