package version

import (
	"os"
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestKubeletVersion(t *testing.T) {
	tests := []struct{ own, want string }{
		{"38ac247", "v1.36.3+minikubelet.38ac247"},
		{"v0.4.0-12-g38ac247-dirty", "v1.36.3+minikubelet.0.4.0-12-g38ac247-dirty"},
		{"v0.0.0-dev", "v1.36.3+minikubelet.0.0.0-dev"},
		{"a b/c", "v1.36.3+minikubelet.a-b-c"},
		{"", "v1.36.3+minikubelet.unknown"},
	}
	for _, tt := range tests {
		got := kubeletVersion("v1.36.3", tt.own)
		if got != tt.want {
			t.Errorf("kubeletVersion(%q) = %q, want %q", tt.own, got, tt.want)
		}
		if _, err := utilversion.ParseSemantic(got); err != nil {
			t.Errorf("%q is not a semantic version: %v", got, err)
		}
	}
}

// KubernetesRelease follows the k8s.io/api module of go.mod: v0.X.Y is
// Kubernetes v1.X.Y.
func TestKubernetesReleaseMatchesGoMod(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(fields) >= 2 && fields[0] == "k8s.io/api" {
			want := "v1." + strings.TrimPrefix(fields[1], "v0.")
			if KubernetesRelease != want {
				t.Errorf("KubernetesRelease = %s, but go.mod has k8s.io/api %s: make it %s", KubernetesRelease, fields[1], want)
			}
			return
		}
	}
	t.Fatal("go.mod requires no k8s.io/api")
}
