package version

import "strings"

// KubernetesRelease is the Kubernetes release whose API the agent
// implements: that of the k8s.io/api module it is built with (v0.36.3 is
// v1.36.3). A test keeps it in step with go.mod.
const KubernetesRelease = "v1.36.3"

// KubeletVersion is the version the Node reports as
// status.nodeInfo.kubeletVersion: a semantic version, as tools compare it
// with the control plane's (version skew, [MinimumKubeletVersion] tests).
// It is the Kubernetes release whose API the agent implements, with the
// agent's own version as build metadata, as k3s reports "v1.30.2+k3s1":
// "v1.36.3+minikubelet.38ac247". Build metadata does not count in a
// comparison.
func KubeletVersion() string {
	return kubeletVersion(KubernetesRelease, Version)
}

func kubeletVersion(release, own string) string {
	return release + "+minikubelet." + buildMetadata(own)
}

// buildMetadata makes s a semver build metadata string: dot-separated
// identifiers of [0-9A-Za-z-], without a leading "v".
func buildMetadata(s string) string {
	s = strings.TrimPrefix(s, "v")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), ".")
	for strings.Contains(out, "..") {
		out = strings.ReplaceAll(out, "..", ".")
	}
	if out == "" {
		return "unknown"
	}
	return out
}
