package sources

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// Source names, as they appear in the kubernetes.io/config.source annotation.
const (
	File = manifest.SourceFile
	HTTP = manifest.SourceHTTP
	API  = manifest.SourceAPI
)

// Update is one complete snapshot of a source's pods.
//
// Pods holds every pod the source wants running now, including the last good
// version of a manifest whose current version is bad. Errors lists the
// manifests that are bad right now. A receiver owns the Update and may keep
// it; a sender never mutates an Update after sending it.
type Update struct {
	// Source is one of File, HTTP, API.
	Source string
	// Pods are decoded, validated, defaulted pods with their static identity
	// (UID, name suffix, config annotations) already applied.
	Pods []*v1.Pod
	// Origins maps each pod's UID to the manifest it came from: a file
	// path or a URL. Conflicts and errors name it.
	Origins map[types.UID]string
	// Errors are the manifests currently refused, one per origin.
	Errors []ManifestError
	// Incomplete: the source could not read its origin (a URL that fails,
	// a directory that cannot be listed), so Pods is only its last good
	// set. Until a source has sent a complete Update the agent deletes
	// nothing it does not know of.
	Incomplete bool
}

// ManifestError is a manifest that was refused, and why.
type ManifestError struct {
	// Source is one of File, HTTP, API.
	Source string
	// Origin names the manifest: a file path or a URL.
	Origin string
	// Err names the field and the reason, e.g.
	// `spec.containers[1].name: Duplicate value: "app"`.
	Err error
}

func (e ManifestError) Error() string {
	return fmt.Sprintf("%s: %v", e.Origin, e.Err)
}

func (e ManifestError) Unwrap() error { return e.Err }
