package cgroups

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// noSuchPID is above any pid_max: signalling it fails with ESRCH, so the
// test kills nothing while the fake cgroup still lists it.
const noSuchPID = "2147483647"

// KillPodProcesses looks again every killPoll of its clock while the pod's
// cgroup still lists processes: it returns once the cgroup is empty, or
// with an error naming the busy cgroup once ctx ends.
func TestKillPodProcessesWaitsByItsClock(t *testing.T) {
	for _, tt := range []struct {
		name    string
		empty   bool // the cgroup empties while it waits; else ctx ends
		wantErr string
	}{
		{name: "the cgroup empties", empty: true},
		{name: "ctx ends first", wantErr: "still busy: ["},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mountRoot := fakeV2(t)
			clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m, err := New(ctx, Config{Root: "/", PerQOS: true, MountRoot: mountRoot, SysRoot: t.TempDir(), Version: 2, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			procs := filepath.Join(mountRoot, "kubepods/podk/cgroup.procs")
			writeFiles(t, mountRoot, map[string]string{"kubepods/podk/cgroup.procs": noSuchPID + "\n"})

			type result struct {
				pids []int
				err  error
			}
			done := make(chan result, 1)
			go func() {
				pids, err := m.KillPodProcesses(ctx, "k")
				done <- result{pids, err}
			}()
			polltest.True(t, 5*time.Second, "KillPodProcesses to wait on its clock for the busy cgroup", clk.HasWaiters)
			select {
			case r := <-done:
				t.Fatalf("KillPodProcesses returned %v, %v while the cgroup is busy", r.pids, r.err)
			default:
			}
			if tt.empty {
				if err := os.WriteFile(procs, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				clk.Step(killPoll)
			} else {
				cancel()
			}
			r := <-done
			switch {
			case tt.wantErr == "" && r.err != nil:
				t.Errorf("KillPodProcesses = %v, %v; want no error", r.pids, r.err)
			case tt.wantErr != "" && (r.err == nil || !strings.Contains(r.err.Error(), tt.wantErr) || !strings.Contains(r.err.Error(), "podk")):
				t.Errorf("KillPodProcesses error = %v; want it to name the busy cgroup", r.err)
			case len(r.pids) != 0:
				t.Errorf("KillPodProcesses signalled %v; want nothing (the PID does not exist)", r.pids)
			}
		})
	}
}
