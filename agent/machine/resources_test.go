package machine

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

func TestNodeAllocatable(t *testing.T) {
	got := Allocatable(t.TempDir())
	if cpu := got.Cpu().Value(); cpu != int64(runtime.NumCPU()) {
		t.Errorf("cpu = %d, want %d", cpu, runtime.NumCPU())
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	if mem, want := got.Memory().Value(), int64(si.Totalram)*int64(si.Unit)-100<<20; mem != want {
		t.Errorf("memory = %d, want the node's %d less 100Mi", mem, want)
	}
	if eph := got.StorageEphemeral().Value(); eph <= 0 {
		t.Errorf("ephemeral-storage = %d, want the root-dir filesystem's capacity less 10%%", eph)
	}
	// A root dir not made yet: the filesystem it will be on.
	if _, ok := Allocatable("/nonexistent/root")[v1.ResourceEphemeralStorage]; !ok {
		t.Error("no ephemeral-storage for a root dir not made yet")
	}
}

func TestMemoryCapacity(t *testing.T) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	// MemTotal and sysinfo's totalram are the same figure.
	if m, want := MemoryCapacity(), int64(si.Totalram)*int64(si.Unit); m != want {
		t.Errorf("MemoryCapacity = %d, want the host's MemTotal %d", m, want)
	}
}
