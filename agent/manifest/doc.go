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
// Hostile input is refused at bounded cost (limits.go). A manifest is at
// most MaxSize bytes of UTF-8, and before anything is decoded its text is
// checked against bounds that keep decoding within a small multiple of its
// size: YAML documents (100 decoded), YAML structure (100,000 keys, entries
// and brackets a document), nesting (100 levels), YAML aliases (expanding to
// at most MaxSize bytes and 250,000 nodes), JSON values (250,000), pods of a
// PodList (10,000), containers and volumes of all its pods (10,000 each), and
// the text of a resource quantity (64 characters). Kubernetes has none of
// these bounds; each is far above what a real manifest needs, and each
// refusal says which was passed. An error lists at most 20 problems and
// quotes at most 128 bytes of a value.
//
// Validation departs from the API server where a node would otherwise act
// on a value it cannot honour: a hostPath must be absolute; no string may
// hold a NUL character; a resource quantity must fit in an int64 (cpu in
// millicores). Names, labels and annotations are checked as the API server
// checks them, except that a value over its length limit gets only the
// length message.
//
// The package is pure: no I/O, no clock, no state. Every function is safe for
// concurrent use on distinct pods.
package manifest
