package eviction

import (
	"context"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// notification is one kernel notification armed on a cgroup's memory.
type notification interface {
	// Wait blocks until the notification fires; it returns an error once
	// the notification is closed (os.ErrClosed) or cannot be waited on.
	Wait() error
	// Close disarms it; a Wait in progress returns. Idempotent.
	Close() error
}

// notifierFactory arms notifications: New fires when the memory usage of
// cgroup (relative to the hierarchy, "/" for the node) may have crossed
// usage bytes.
type notifierFactory interface {
	New(cgroup string, usage int64) (notification, error)
}

// memoryNotifier keeps one notification armed for one memory threshold,
// on the node's cgroup or the pods cgroup, at the usage where the
// threshold is crossed, and pokes the manager when it fires.
type memoryNotifier struct {
	threshold Threshold
	cgroup    string
	current   notification
	// wg counts the goroutines waiting on notifications.
	wg *sync.WaitGroup
}

// updateNotifiers arms, at most every notifierRefreshInterval, a
// notification per memory threshold at the usage where it is crossed now:
// capacity less the threshold plus the inactive page cache, since the
// signal is capacity less the working set (usage less inactive page
// cache). The kubelet arms the same, on cgroup v1.
func (m *Manager) updateNotifiers(ctx context.Context, s *statsapi.Summary, now time.Time) {
	if m.cfg.Notifications == nil || now.Sub(m.notifiersUpdated) < notifierRefreshInterval {
		return
	}
	m.notifiersUpdated = now
	logger := klog.FromContext(ctx)
	if m.notifiers == nil {
		for _, t := range m.cfg.Thresholds {
			switch t.Signal {
			case SignalMemoryAvailable:
				m.notifiers = append(m.notifiers, &memoryNotifier{threshold: t, cgroup: "/", wg: &m.notifyWG})
			case SignalAllocatableMemoryAvailable:
				m.notifiers = append(m.notifiers, &memoryNotifier{threshold: t, cgroup: m.cfg.PodsCgroup, wg: &m.notifyWG})
			}
		}
	}
	for _, n := range m.notifiers {
		mem := s.Node.Memory
		if n.threshold.Signal == SignalAllocatableMemoryAvailable {
			mem = nil
			for _, c := range s.Node.SystemContainers {
				if c.Name == statsapi.SystemContainerPods {
					mem = c.Memory
				}
			}
		}
		if mem == nil || mem.UsageBytes == nil || mem.WorkingSetBytes == nil || mem.AvailableBytes == nil {
			logger.V(2).Info("No memory figures to arm a memory notification with", "threshold", n.threshold.String())
			continue
		}
		capacity := int64(*mem.AvailableBytes + *mem.WorkingSetBytes)
		inactive := int64(*mem.UsageBytes) - int64(*mem.WorkingSetBytes)
		amount := n.threshold.Value.Amount(capacity)
		usage := capacity - amount.Value() + inactive
		if err := n.arm(m.cfg.Notifications, usage, m.wake); err != nil {
			logger.Info("Could not arm a memory notification; the threshold is checked every monitoring period only", "threshold", n.threshold.String(), "cgroup", n.cgroup, "err", err)
			continue
		}
		logger.V(3).Info("Memory notification armed", "threshold", n.threshold.String(), "cgroup", n.cgroup, "usage", resource.NewQuantity(usage, resource.BinarySI).String())
	}
}

// arm replaces the notification with one at usage, whose firing pokes
// wake (without blocking).
func (n *memoryNotifier) arm(f notifierFactory, usage int64, wake chan<- struct{}) error {
	next, err := f.New(n.cgroup, usage)
	if err != nil {
		return err
	}
	if n.current != nil {
		_ = n.current.Close()
	}
	n.current = next
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			if err := next.Wait(); err != nil {
				return
			}
			select {
			case wake <- struct{}{}:
			default: // a round is already due
			}
		}
	}()
	return nil
}

// closeNotifiers disarms every notification and waits for their
// goroutines to end.
func (m *Manager) closeNotifiers() {
	for _, n := range m.notifiers {
		if n.current != nil {
			_ = n.current.Close()
		}
	}
	m.notifyWG.Wait()
}

// errClosed is what a closed notification's Wait returns.
var errClosed = os.ErrClosed
