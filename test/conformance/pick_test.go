package conformance

import (
	"slices"
	"testing"
)

func TestArea(t *testing.T) {
	tests := []struct{ in, want string }{
		{"[sig-storage] Projected configMap should be consumable from pods in volume [NodeConformance] [Conformance]", "[sig-storage] Projected configMap"},
		{"[sig-node] Kubelet when scheduling a busybox command in a pod should print the output to logs", "[sig-node] Kubelet"},
		{"[sig-node] Container Runtime blackbox test on terminated container should report termination message", "[sig-node] Container Runtime blackbox"},
		{"[sig-node] Pods Extended Pod Container lifecycle should not create extra sandbox", "[sig-node] Pods Extended Pod"},
		{"[sig-storage] EmptyDir volumes should support (root,0644,tmpfs) [LinuxOnly]", "[sig-storage] EmptyDir volumes"},
		{"[sig-node] Pods [Serial] x", "[sig-node] Pods"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Area(tt.in); got != tt.want {
			t.Errorf("Area(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// PickSlice takes, per area with a pass, the fastest passing spec (one
// tagged [NodeConformance] first), and leaves out an area whose passes are all slower than the bound.
func TestPickSlice(t *testing.T) {
	results := []Result{
		{Name: "[sig-node] Pods should a", State: "passed", Seconds: 20},
		{Name: "[sig-node] Pods should b", State: "passed", Seconds: 8},
		{Name: "[sig-node] Pods should c", State: "failed", Seconds: 1},
		{Name: "[sig-node] Probing container should d", State: "passed", Seconds: 240},
		{Name: "[sig-node] Probing container should e", State: "passed", Seconds: 120},
		{Name: "[sig-node] Lease should f", State: "failed", Seconds: 2},
		{Name: "[sig-storage] Secrets should g", State: "passed", Seconds: 9},
		{Name: "[sig-storage] Secrets should h", State: "passed", Seconds: 9},
		{Name: "[sig-storage] ConfigMap should i", State: "passed", Seconds: 2},
		{Name: "[sig-storage] ConfigMap should j [NodeConformance]", State: "passed", Seconds: 30},
	}
	names, slow := PickSlice(results, 60)
	want := []string{"[sig-node] Pods should b", "[sig-storage] ConfigMap should j [NodeConformance]", "[sig-storage] Secrets should g"}
	if !slices.Equal(names, want) {
		t.Errorf("names = %q, want %q", names, want)
	}
	if !slices.Equal(slow, []string{"[sig-node] Probing container"}) {
		t.Errorf("slow = %q", slow)
	}
}
