package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// Annotations a static pod carries, as the kubelet names them.
const (
	// AnnotationConfigHash is a hash of the pod's content; mirror pods carry
	// it. It changes when any field of the manifest changes.
	AnnotationConfigHash = "kubernetes.io/config.hash"
	// AnnotationConfigSource is the source the pod came from: SourceFile,
	// SourceHTTP or SourceAPI.
	AnnotationConfigSource = kubecontainer.AnnotationConfigSource
	// AnnotationConfigSeen is when the agent first saw the pod, in RFC 3339
	// with nanoseconds.
	AnnotationConfigSeen = "kubernetes.io/config.seen"
	// AnnotationConfigOrigin is the manifest the pod came from: a file path
	// or a URL (its password redacted). It reaches the pod's sandbox, so
	// that an agent restarted after the manifest vanished knows which
	// running pods to terminate, and which to keep because their manifest
	// is only bad right now (DESIGN.md rule 5).
	AnnotationConfigOrigin = "minikubelet.io/config.origin"
	// AnnotationMirror marks a mirror pod: the API's copy of a static pod.
	// Its value is the static pod's config hash.
	AnnotationMirror = "kubernetes.io/config.mirror"
)

// The values of AnnotationConfigSource, as the kubelet names its sources.
// agent/sources re-exports them as sources.File, .HTTP and .API.
const (
	SourceFile = "file"
	SourceHTTP = "http"
	SourceAPI  = "api"
)

// Identity is what a static pod's identity derives from besides its content.
type Identity struct {
	// NodeName is the name of this node; it must not be empty.
	NodeName string
	// Source is SourceFile or SourceHTTP.
	Source string
	// Origin names the manifest: the file path or the URL.
	Origin string
	// Seen is when the source read this version of the manifest.
	Seen time.Time
}

// ApplyStaticIdentity turns a decoded, defaulted pod into the static pod of
// this node, per DESIGN.md rule 7:
//
//   - namespace "default" when empty;
//   - name suffixed with "-" and the lowercased node name;
//   - UID: 32 hex characters of a SHA-256 over node name, source, origin and
//     namespace/name (the name as written), so it is the same for every
//     version of one manifest and differs between manifests, nodes and pod
//     names; a UID in the manifest is overwritten;
//   - kubernetes.io/config.hash: a hash of the pod as it was passed in,
//     before any of these changes; kubernetes.io/config.source: in.Source;
//     kubernetes.io/config.seen: in.Seen;
//   - spec.nodeName set to the node name, status.phase Pending and, for the
//     file source, a toleration of every NoExecute taint, as the kubelet
//     does for static pods.
//
// Call it once, on a pod fresh from Decode and Default: the content hash
// covers the pod as passed in.
func ApplyStaticIdentity(pod *v1.Pod, in Identity) {
	contentHash := hashPod(pod)

	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.UID = StaticUID(in, pod.Namespace, pod.Name)
	pod.Name = pod.Name + "-" + strings.ToLower(in.NodeName)
	pod.Spec.NodeName = in.NodeName

	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationConfigHash] = contentHash
	pod.Annotations[AnnotationConfigSource] = in.Source
	pod.Annotations[AnnotationConfigSeen] = in.Seen.Format(time.RFC3339Nano)
	pod.Annotations[AnnotationConfigOrigin] = in.Origin

	if in.Source == SourceFile {
		tolerateNoExecute(pod)
	}
	pod.Status.Phase = v1.PodPending
}

// StaticUID is the UID ApplyStaticIdentity gives the pod namespace/name
// (name without the node suffix) of the manifest in.Origin.
func StaticUID(in Identity, namespace, name string) types.UID {
	h := sha256.New()
	for _, s := range []string{in.NodeName, in.Source, in.Origin, namespace + "/" + name} {
		// Length-prefix each part so that no two tuples hash alike.
		h.Write([]byte{byte(len(s) >> 24), byte(len(s) >> 16), byte(len(s) >> 8), byte(len(s))})
		h.Write([]byte(s))
	}
	return types.UID(hex.EncodeToString(h.Sum(nil)[:16]))
}

// hashPod hashes the JSON form of pod, whose field and map key order is
// fixed, so equal pods hash alike.
func hashPod(pod *v1.Pod) string {
	data, err := json.Marshal(pod)
	if err != nil {
		// A v1.Pod always marshals; were it not to, hash its Go syntax so
		// the annotation still changes with the content.
		data = []byte(pod.String())
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

func tolerateNoExecute(pod *v1.Pod) {
	want := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	for _, t := range pod.Spec.Tolerations {
		if t.MatchToleration(&want) {
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, want)
}
