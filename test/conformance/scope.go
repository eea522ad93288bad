package conformance

import (
	"strings"
)

// Focus selects the specs in scope: the [Conformance] specs of
// [sig-node], and those of [sig-storage] that exercise the node's own
// volume types (configMap, secret, downwardAPI, projected, emptyDir,
// hostPath, and the subPath mounts of the first four).
const Focus = `(\[sig-node\]|\[sig-storage\] (ConfigMap|Secrets|Downward API volume|Projected (configMap|secret|downwardAPI|combined)|EmptyDir volumes|HostPath|Subpath)) .*\[Conformance\]`

// A Skip is a spec in scope that the harness does not run, and why.
type Skip struct {
	// Pattern is a regular expression on the spec's text.
	Pattern string
	// Reason says why the harness cannot host it.
	Reason string
}

// Skips are the specs in scope left out, each with its reason. The
// [Serial] and [Disruptive] specs in scope run (alone, at the end): a
// one-node cluster hosts them.
var Skips = []Skip{
	{
		Pattern: `\[sig-node\] ImageVolume should succeed with pod and pull policy of Always`,
		Reason:  "pulls registry.k8s.io/e2e-test-images/kitten with pullPolicy Always: the registry cannot be reached here, and no local image stands in for a pull",
	},
}

// SkipRegexp is every Skip's pattern as one -ginkgo.skip expression.
func SkipRegexp() string {
	pats := make([]string, len(Skips))
	for i, s := range Skips {
		pats[i] = s.Pattern
	}
	return strings.Join(pats, "|")
}
