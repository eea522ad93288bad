package agent

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pleg"
)

func TestHealth(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	runtime := new(atomic.Pointer[runtimeParts])
	h := &health{clock: clk, runtimeEndpoint: "unix:///run/containerd/containerd.sock", runtime: runtimeView{runtime}.plegOf}
	wantErr := func(what string, err error, want string) {
		t.Helper()
		if want == "" && err != nil || want != "" && (err == nil || err.Error() != want) {
			t.Errorf("%s = %v, want %q", what, err, want)
		}
	}
	wantErr("RuntimeHealthy before the runtime answered", h.RuntimeHealthy(), "container runtime at unix:///run/containerd/containerd.sock has not answered yet")
	wantErr("PLEGHealthy before the runtime answered", h.PLEGHealthy(), "pleg not started")
	wantErr("SyncLoopHealthy before it turned", h.SyncLoopHealthy(), "sync loop not started")
	wantErr("Ready before anything", h.Ready(), "container runtime at unix:///run/containerd/containerd.sock has not answered yet")
	if h.RuntimeReady() || h.SyncLoopStarted() {
		t.Error("runtime ready or sync loop started before either")
	}

	runtime.Store(&runtimeParts{pleg: fakePLEG{}})
	h.beat()
	wantErr("Ready once all is up", h.Ready(), "")
	if !h.RuntimeReady() || !h.SyncLoopStarted() {
		t.Error("runtime not ready or sync loop not started after both")
	}
	clk.Step(syncLoopStallThreshold + 30*time.Second)
	wantErr("SyncLoopHealthy when stalled", h.SyncLoopHealthy(), "sync loop last turned 1m0s ago; threshold is 30s")
	wantErr("Ready when stalled", h.Ready(), "sync loop last turned 1m0s ago; threshold is 30s")
	h.beat()
	wantErr("SyncLoopHealthy turning again", h.SyncLoopHealthy(), "")
}

// fakePLEG is a healthy PLEG that sees nothing.
type fakePLEG struct{}

func (fakePLEG) Run(context.Context)       {}
func (fakePLEG) Watch() <-chan *pleg.Event { return nil }
func (fakePLEG) Healthy() error            { return nil }
func (fakePLEG) Mode() string              { return "relist" }
func (fakePLEG) LastSeen() time.Time       { return time.Time{} }
func (fakePLEG) Dropped() uint64           { return 0 }
