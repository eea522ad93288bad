// Package manifest turns the bytes of a static pod manifest into the pod a
// node runs. It owns the manifest format (one v1 Pod, YAML or JSON, decoded
// strictly), the subset of API validation a node cannot run without, the API
// server defaults a node relies on, and the static pod identity of DESIGN.md
// rule 7 (UID, name suffix, config annotations).
//
// Data enters as a []byte and an Identity (node name, source, origin, time
// seen) and leaves as a *v1.Pod ready for the pod config merge, or as an error
// that names the field and the fix. Sources call Load; Decode, Default,
// Validate and ApplyStaticIdentity are its steps, exported for sources whose
// pods need only some of them.
//
// The package is pure: no I/O, no clock, no state. Every function is safe for
// concurrent use on distinct pods.
package manifest
