package manifest

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

var seen = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

func fileIdentity(node, origin string) Identity {
	return Identity{NodeName: node, Source: SourceFile, Origin: origin, Seen: seen}
}

func mustLoad(t *testing.T, data string, in Identity) *v1.Pod {
	t.Helper()
	pod, err := Load([]byte(data), in)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return pod
}

func TestLoadAppliesIdentity(t *testing.T) {
	pod := mustLoad(t, goodYAML, fileIdentity("Node-A", "/etc/kubernetes/manifests/web.yaml"))
	checks := []struct {
		name, got, want string
	}{
		{"namespace", pod.Namespace, "default"},
		{"name", pod.Name, "web-node-a"},
		{"nodeName", pod.Spec.NodeName, "Node-A"},
		{"config.source", pod.Annotations[AnnotationConfigSource], "file"},
		{"config.seen", pod.Annotations[AnnotationConfigSeen], "2026-03-01T12:00:00.123456789Z"},
		{"phase", string(pod.Status.Phase), "Pending"},
		{"restartPolicy (defaulted)", string(pod.Spec.RestartPolicy), "Always"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if len(pod.UID) != 32 {
		t.Errorf("UID %q is not 32 hex characters", pod.UID)
	}
	if h := pod.Annotations[AnnotationConfigHash]; len(h) != 32 || h == string(pod.UID) {
		t.Errorf("config.hash %q: want 32 hex characters, not the UID", h)
	}
	if n := len(pod.Spec.Tolerations); n != 1 || pod.Spec.Tolerations[0].Effect != v1.TaintEffectNoExecute || pod.Spec.Tolerations[0].Operator != v1.TolerationOpExists {
		t.Errorf("tolerations = %+v, want one NoExecute Exists", pod.Spec.Tolerations)
	}

	httpPod := mustLoad(t, goodYAML, Identity{NodeName: "n", Source: SourceHTTP, Origin: "http://x/pod", Seen: seen})
	if len(httpPod.Spec.Tolerations) != 0 {
		t.Errorf("http pod got tolerations %+v, want none", httpPod.Spec.Tolerations)
	}
}

func TestLoadKeepsExplicitNamespaceAndToleration(t *testing.T) {
	data := strings.Replace(goodYAML, "  name: web\n", "  name: web\n  namespace: kube-system\n", 1) +
		"  tolerations:\n  - operator: Exists\n    effect: NoExecute\n"
	pod := mustLoad(t, data, fileIdentity("n", "/m/web.yaml"))
	if pod.Namespace != "kube-system" {
		t.Errorf("namespace = %q, want kube-system", pod.Namespace)
	}
	if len(pod.Spec.Tolerations) != 1 {
		t.Errorf("tolerations = %+v, want the one from the manifest", pod.Spec.Tolerations)
	}
}

func TestStaticIdentityStability(t *testing.T) {
	const origin = "/etc/kubernetes/manifests/web.yaml"
	base := mustLoad(t, goodYAML, fileIdentity("node-a", origin))
	edited := strings.Replace(goodYAML, "nginx:1.27", "nginx:1.28", 1)
	withLabel := strings.Replace(goodYAML, "  name: web\n", "  name: web\n  labels:\n    tier: front\n", 1)

	tests := []struct {
		name     string
		data     string
		in       Identity
		sameUID  bool
		sameHash bool
	}{
		{name: "same manifest read again later", data: goodYAML, in: Identity{NodeName: "node-a", Source: SourceFile, Origin: origin, Seen: seen.Add(time.Hour)}, sameUID: true, sameHash: true},
		{name: "image edited", data: edited, in: fileIdentity("node-a", origin), sameUID: true},
		{name: "label added", data: withLabel, in: fileIdentity("node-a", origin), sameUID: true},
		{name: "other file", data: goodYAML, in: fileIdentity("node-a", "/etc/kubernetes/manifests/web2.yaml"), sameHash: true},
		{name: "other node", data: goodYAML, in: fileIdentity("node-b", origin), sameHash: true},
		{name: "other source", data: goodYAML, in: Identity{NodeName: "node-a", Source: SourceHTTP, Origin: origin, Seen: seen}, sameHash: true},
		{name: "other name", data: strings.Replace(goodYAML, "name: web", "name: api", 1), in: fileIdentity("node-a", origin)},
		{name: "other namespace", data: strings.Replace(goodYAML, "  name: web\n", "  name: web\n  namespace: ops\n", 1), in: fileIdentity("node-a", origin)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := mustLoad(t, tt.data, tt.in)
			if got := pod.UID == base.UID; got != tt.sameUID {
				t.Errorf("same UID = %v, want %v (UIDs %s, %s)", got, tt.sameUID, pod.UID, base.UID)
			}
			h, baseHash := pod.Annotations[AnnotationConfigHash], base.Annotations[AnnotationConfigHash]
			if got := h == baseHash; got != tt.sameHash {
				t.Errorf("same config.hash = %v, want %v (%s, %s)", got, tt.sameHash, h, baseHash)
			}
		})
	}
}

func TestStaticUIDHasNoAmbiguousParts(t *testing.T) {
	a := StaticUID(Identity{NodeName: "ab", Source: "c", Origin: "d"}, "ns", "n")
	b := StaticUID(Identity{NodeName: "a", Source: "bc", Origin: "d"}, "ns", "n")
	if a == b {
		t.Fatalf("StaticUID collides for shifted parts: %s", a)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		node    string
		wantErr string
		invalid bool // an *InvalidError
	}{
		{name: "decode error", data: "kind: Pod\n", node: "n", wantErr: "apiVersion is missing"},
		{
			name:    "validation errors are listed together",
			data:    strings.Replace(goodYAML, "    image: nginx:1.27\n", "  - name: app\n    image: x\n", 1),
			node:    "n",
			wantErr: `invalid pod: spec.containers[0].image: Required value: image is required; spec.containers[1].name: Duplicate value: "app"`,
			invalid: true,
		},
		{
			name:    "name too long with the node suffix",
			data:    strings.Replace(goodYAML, "name: web", "name: "+strings.Repeat("w", 250), 1),
			node:    "node-a",
			wantErr: "invalid pod: metadata.name: Invalid value: \"www",
			invalid: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, err := Load([]byte(tt.data), fileIdentity(tt.node, "/m/x.yaml"))
			if err == nil {
				t.Fatalf("Load = %v, want error", pod.Name)
			}
			if pod != nil {
				t.Errorf("Load returned a pod with its error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Load error = %q, want it to contain %q", err, tt.wantErr)
			}
			var inv *InvalidError
			if got := errors.As(err, &inv); got != tt.invalid {
				t.Errorf("errors.As(*InvalidError) = %v, want %v", got, tt.invalid)
			}
		})
	}
}
