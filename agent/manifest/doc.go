// Package manifest turns the bytes of a static pod manifest into the pod a
// node runs. It owns the manifest formats (one v1 Pod in a file; one Pod or
// a PodList in the body of a manifest URL; YAML or JSON, decoded strictly),
// the subset of API validation a node cannot run without, the restrictions
// on static pods (no references to API objects), the API server defaults a
// node relies on, and the static pod identity of DESIGN.md rule 7 (UID, name
// suffix, config annotations).
//
// Data enters as a []byte and an Identity (node name, source, origin, time
// seen) and leaves as pods ready for the pod config merge, or as an error
// that names the field and the fix. The file source calls Load, the HTTP
// source LoadList; Decode, DecodeList, Default, Validate, ValidateStatic and
// ApplyStaticIdentity are their steps, exported for sources whose pods need
// only some of them (an API server's pods need no ValidateStatic).
//
// The package is pure: no I/O, no clock, no state. Every function is safe for
// concurrent use on distinct pods.
package manifest
