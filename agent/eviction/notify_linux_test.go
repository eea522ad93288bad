package eviction

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary allocate memory for the notification
// test, in a child process placed in a cgroup.
func TestMain(m *testing.M) {
	if mib, err := strconv.Atoi(os.Getenv("EVICTION_TEST_ALLOCATE_MIB")); err == nil {
		hold := make([][]byte, 0, mib)
		for range mib {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			hold = append(hold, b)
		}
		// Wait to be killed, holding the memory.
		_, _ = os.Stdin.Read(make([]byte, 1))
		fmt.Println(len(hold))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A cgroup v1 memory threshold fires when a process in the cgroup
// allocates past it, and Close ends a Wait.
func TestMemcgThreshold(t *testing.T) {
	root := "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(root, "cgroup.event_control")); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and the cgroup v1 memory hierarchy")
	}
	cg := fmt.Sprintf("/minikubelet-eviction-test-%d", os.Getpid())
	dir := filepath.Join(root, cg)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dir)
	b, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		t.Fatal(err)
	}
	usage, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	n, err := CgroupNotifications{MountRoot: "/sys/fs/cgroup", Version: 1}.New(cg, usage+20<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	fired := make(chan error, 1)
	go func() { fired <- n.Wait() }()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "EVICTION_TEST_ALLOCATE_MIB=40")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		stdin.Close()
	}()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-fired:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no notification 30s after the child started allocating 40MiB past a threshold 20MiB away")
	}

	// Close ends a Wait in progress.
	go func() { fired <- n.Wait() }()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-fired:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("Wait after Close: %v, want os.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not end on Close")
	}
}

// A PSI trigger can be armed on the node's memory pressure, and Close ends
// a Wait.
func TestPSITrigger(t *testing.T) {
	if _, err := os.Stat("/proc/pressure/memory"); err != nil {
		t.Skip("no PSI on this kernel")
	}
	n, err := CgroupNotifications{Version: 2}.New("/", 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Wait() }()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		// A stall may have fired the trigger before the Close.
		if err != nil && !errors.Is(err, os.ErrClosed) {
			t.Errorf("Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not end on Close")
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
