package agent

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/server"
)

// syncLoopStallThreshold is how long the syncLoop may go without turning
// before /healthz fails.
const syncLoopStallThreshold = 30 * time.Second

// health says how the agent does, for /healthz, the Node's Ready condition
// (node mode) and the service manager (agent/notify): whether the runtime
// has answered and the PLEG sees it (from the published runtime parts),
// and whether the syncLoop turns (its heartbeat). Safe for concurrent use.
type health struct {
	clock           clock.PassiveClock
	runtimeEndpoint string
	// runtime returns the PLEG of the runtime parts, and false before they
	// are built.
	runtime func() (pleg healthChecker, built bool)
	// tick is the UnixNano time of the syncLoop's last turn; 0 before the
	// first.
	tick atomic.Int64
}

// healthChecker is a part with a health check of its own (the PLEG).
type healthChecker interface {
	Healthy() error
}

// beat records a turn of the syncLoop.
func (h *health) beat() { h.tick.Store(h.clock.Now().UnixNano()) }

// checks are the named checks of /healthz.
func (h *health) checks() []server.Check {
	return []server.Check{
		{Name: "runtime", Check: h.RuntimeHealthy},
		{Name: "pleg", Check: h.PLEGHealthy},
		{Name: "syncloop", Check: h.SyncLoopHealthy},
	}
}

// Ready is the Node's Ready condition: the runtime answers, the PLEG
// relists and the syncLoop turns.
func (h *health) Ready() error {
	for _, c := range h.checks() {
		if err := c.Check(); err != nil {
			return err
		}
	}
	return nil
}

// RuntimeReady reports whether the runtime has answered and its parts are
// built.
func (h *health) RuntimeReady() bool {
	_, built := h.runtime()
	return built
}

// RuntimeHealthy fails until the runtime has answered.
func (h *health) RuntimeHealthy() error {
	if !h.RuntimeReady() {
		return fmt.Errorf("container runtime at %s has not answered yet", h.runtimeEndpoint)
	}
	return nil
}

// PLEGHealthy fails until the PLEG exists, then as it says.
func (h *health) PLEGHealthy() error {
	p, built := h.runtime()
	if !built {
		return errors.New("pleg not started")
	}
	return p.Healthy()
}

// SyncLoopStarted reports whether the syncLoop has turned once.
func (h *health) SyncLoopStarted() bool { return h.tick.Load() != 0 }

// SyncLoopHealthy fails when the syncLoop has not turned for a while: it
// turns at least every sync tick.
func (h *health) SyncLoopHealthy() error {
	last := h.tick.Load()
	if last == 0 {
		return errors.New("sync loop not started")
	}
	if age := h.clock.Since(time.Unix(0, last)); age > syncLoopStallThreshold {
		return fmt.Errorf("sync loop last turned %v ago; threshold is %v", age.Round(time.Second), syncLoopStallThreshold)
	}
	return nil
}
