package eviction

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// observation is what one signal measured: the amount available of the
// capacity, at a time.
type observation struct {
	available, capacity int64
	// format prints the amounts: bytes in binary units, counts plain.
	format resource.Format
	time   time.Time
}

// availableQuantity is the amount available, printable.
func (o observation) availableQuantity() resource.Quantity {
	return *resource.NewQuantity(o.available, o.format)
}

// observations are the signals measured in one summary.
type observations map[Signal]observation

// observe measures every signal the summary has figures for, as the
// kubelet's makeSignalObservations does: memory.available from the node's
// working set and available bytes, allocatableMemory.available from the
// pods cgroup's, the filesystems' and the pids' from the node's figures.
func observe(s *statsapi.Summary) observations {
	out := observations{}
	if m := s.Node.Memory; m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
		out[SignalMemoryAvailable] = observation{
			available: int64(*m.AvailableBytes), capacity: int64(*m.AvailableBytes + *m.WorkingSetBytes),
			format: resource.BinarySI, time: m.Time.Time,
		}
	}
	for _, c := range s.Node.SystemContainers {
		if m := c.Memory; c.Name == statsapi.SystemContainerPods && m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
			out[SignalAllocatableMemoryAvailable] = observation{
				available: int64(*m.AvailableBytes), capacity: int64(*m.AvailableBytes + *m.WorkingSetBytes),
				format: resource.BinarySI, time: m.Time.Time,
			}
		}
	}
	fs := func(f *statsapi.FsStats, bytes, inodes Signal) {
		if f == nil {
			return
		}
		if f.AvailableBytes != nil && f.CapacityBytes != nil {
			out[bytes] = observation{available: int64(*f.AvailableBytes), capacity: int64(*f.CapacityBytes), format: resource.BinarySI, time: f.Time.Time}
		}
		if f.InodesFree != nil && f.Inodes != nil {
			out[inodes] = observation{available: int64(*f.InodesFree), capacity: int64(*f.Inodes), format: resource.DecimalSI, time: f.Time.Time}
		}
	}
	fs(s.Node.Fs, SignalNodeFsAvailable, SignalNodeFsInodesFree)
	if s.Node.Runtime != nil {
		fs(s.Node.Runtime.ImageFs, SignalImageFsAvailable, SignalImageFsInodesFree)
	}
	if r := s.Node.Rlimit; r != nil && r.MaxPID != nil && r.NumOfRunningProcesses != nil {
		out[SignalPIDAvailable] = observation{
			available: *r.MaxPID - *r.NumOfRunningProcesses, capacity: *r.MaxPID,
			format: resource.DecimalSI, time: r.Time.Time,
		}
	}
	return out
}

// podStats returns a lookup of the summary's pods by UID.
func podStats(s *statsapi.Summary) func(pod *v1.Pod) (statsapi.PodStats, bool) {
	byUID := make(map[string]statsapi.PodStats, len(s.Pods))
	for _, p := range s.Pods {
		byUID[p.PodRef.UID] = p
	}
	return func(pod *v1.Pod) (statsapi.PodStats, bool) {
		p, ok := byUID[string(pod.UID)]
		return p, ok
	}
}

// thresholdsMet returns the thresholds whose signal is below their value
// now, grace periods aside; with enforceMinReclaim, below their value plus
// their minimum reclaim. A signal not observed meets nothing.
func thresholdsMet(ts []Threshold, obs observations, enforceMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		q := t.Value.Amount(o.capacity)
		if enforceMinReclaim {
			q.Add(t.MinReclaim.Amount(o.capacity))
		}
		if q.Value() > o.available {
			out = append(out, t)
		}
	}
	return out
}

// mergeThresholds is a and those of b not in a.
func mergeThresholds(a, b []Threshold) []Threshold {
	out := append([]Threshold(nil), a...)
	for _, t := range b {
		if !hasThreshold(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func hasThreshold(ts []Threshold, t Threshold) bool {
	for _, x := range ts {
		if x.Signal == t.Signal && x.Value == t.Value && x.GracePeriod == t.GracePeriod {
			return true
		}
	}
	return false
}

// firstObservedAt is when each threshold of ts was first met in the run of
// observations that meet it now.
func firstObservedAt(ts []Threshold, last map[Threshold]time.Time, now time.Time) map[Threshold]time.Time {
	out := make(map[Threshold]time.Time, len(ts))
	for _, t := range ts {
		at, ok := last[t]
		if !ok {
			at = now
		}
		out[t] = at
	}
	return out
}

// gracePeriodsMet returns the thresholds met for at least their grace
// period.
func gracePeriodsMet(observedAt map[Threshold]time.Time, now time.Time) []Threshold {
	var out []Threshold
	for t, at := range observedAt {
		if now.Sub(at) >= t.GracePeriod {
			out = append(out, t)
		}
	}
	return out
}

// conditionsOf returns the node conditions the thresholds raise.
func conditionsOf(ts []Threshold) []v1.NodeConditionType {
	var out []v1.NodeConditionType
	for _, t := range ts {
		if c, ok := signalCondition[t.Signal]; ok && !hasCondition(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// conditionsLastObservedAt records now for the conditions observed and
// keeps the others' last time.
func conditionsLastObservedAt(conds []v1.NodeConditionType, last map[v1.NodeConditionType]time.Time, now time.Time) map[v1.NodeConditionType]time.Time {
	out := make(map[v1.NodeConditionType]time.Time, len(last)+len(conds))
	for c, at := range last {
		out[c] = at
	}
	for _, c := range conds {
		out[c] = now
	}
	return out
}

// conditionsObservedSince returns the conditions observed within period
// of now: a condition holds for the pressure transition period after its
// thresholds stop being met.
func conditionsObservedSince(observedAt map[v1.NodeConditionType]time.Time, period time.Duration, now time.Time) []v1.NodeConditionType {
	var out []v1.NodeConditionType
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if at, ok := observedAt[c]; ok && now.Sub(at) < period {
			out = append(out, c)
		}
	}
	return out
}

func hasCondition(cs []v1.NodeConditionType, c v1.NodeConditionType) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// thresholdsUpdated returns the thresholds whose signal was measured anew
// since last: a threshold met on stale figures (the stats of a pod just
// evicted) does not evict again.
func thresholdsUpdated(ts []Threshold, obs, last observations) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		l, seen := last[t.Signal]
		if !seen || o.time.IsZero() || o.time.After(l.time) {
			out = append(out, t)
		}
	}
	return out
}
