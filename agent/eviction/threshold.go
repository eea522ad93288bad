package eviction

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultHard are the kubelet's default hard eviction thresholds on Linux
// (--eviction-hard, evictionHard), used when none are given.
func DefaultHard() map[string]string {
	return map[string]string{
		"memory.available":   "100Mi",
		"nodefs.available":   "10%",
		"nodefs.inodesFree":  "5%",
		"imagefs.available":  "15%",
		"imagefs.inodesFree": "5%",
	}
}

// Value is an amount a threshold compares with: an absolute quantity, or
// a fraction of the signal's capacity. Comparable, so that thresholds can
// key maps.
type Value struct {
	// Quantity is bytes, inodes or pids, in Format for messages; used
	// when Percentage is 0.
	Quantity int64
	Format   resource.Format
	// Percentage is a fraction of capacity in (0, 1], as the kubelet
	// keeps it (a float32).
	Percentage float32
}

// Amount is v of capacity, as the kubelet's GetThresholdQuantity.
func (v Value) Amount(capacity int64) resource.Quantity {
	if v.Percentage != 0 {
		return *resource.NewQuantity(int64(float64(capacity)*float64(v.Percentage)), resource.BinarySI)
	}
	return *resource.NewQuantity(v.Quantity, v.Format)
}

// Threshold is one eviction threshold: Signal below Value, held for
// GracePeriod (0 for a hard threshold). Once met, it holds until the
// signal is MinReclaim above Value. Comparable.
type Threshold struct {
	Signal      Signal
	Value       Value
	GracePeriod time.Duration
	MinReclaim  Value
}

// hard reports whether the threshold acts at once (no grace period).
func (t Threshold) hard() bool { return t.GracePeriod == 0 }

// String describes the threshold for logs: memory.available<100Mi, or
// memory.available<1Gi for 1m30s.
func (t Threshold) String() string {
	v := t.Value.String()
	if t.hard() {
		return fmt.Sprintf("%s<%s", t.Signal, v)
	}
	return fmt.Sprintf("%s<%s for %v", t.Signal, v, t.GracePeriod)
}

func (v Value) String() string {
	if v.Percentage != 0 {
		// Rounded to 4 decimals: a float32 holds 15% as 15.000001%.
		return strconv.FormatFloat(math.Round(float64(v.Percentage)*1e6)/1e4, 'f', -1, 64) + "%"
	}
	q := resource.NewQuantity(v.Quantity, v.Format)
	return q.String()
}

// ThresholdSettings are the eviction settings as the flags and the config
// file give them: signal name to value.
type ThresholdSettings struct {
	// Hard is --eviction-hard (evictionHard): signal to quantity or
	// percentage; "0%" and "100%" turn a signal off.
	Hard map[string]string
	// Soft is --eviction-soft, each with its grace period in
	// SoftGracePeriod (--eviction-soft-grace-period).
	Soft            map[string]string
	SoftGracePeriod map[string]string
	// MinimumReclaim is --eviction-minimum-reclaim.
	MinimumReclaim map[string]string
	// EnforcePods is --enforce-node-allocatable containing "pods": the
	// hard memory.available threshold is also one on
	// allocatableMemory.available.
	EnforcePods bool
}

// ParseThresholds turns the settings into thresholds, hard ones first, as
// the kubelet's ParseThresholdConfig does. Its errors name the setting
// (eviction-hard, ...) and the signal.
func ParseThresholds(s ThresholdSettings) ([]Threshold, error) {
	var errs []error
	hard, err := parseStatements(s.Hard)
	if err != nil {
		errs = append(errs, fmt.Errorf("eviction-hard: %w", err))
	}
	soft, err := parseStatements(s.Soft)
	if err != nil {
		errs = append(errs, fmt.Errorf("eviction-soft: %w", err))
	}
	grace, err := ParseGracePeriods(s.SoftGracePeriod)
	if err != nil {
		errs = append(errs, fmt.Errorf("eviction-soft-grace-period: %w", err))
	}
	reclaim, err := ParseMinimumReclaims(s.MinimumReclaim)
	if err != nil {
		errs = append(errs, fmt.Errorf("eviction-minimum-reclaim: %w", err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for i := range soft {
		period, ok := grace[soft[i].Signal]
		if !ok || period == 0 {
			errs = append(errs, fmt.Errorf("eviction-soft: %s: needs a grace period in eviction-soft-grace-period (e.g. %s=1m30s)", soft[i].Signal, soft[i].Signal))
			continue
		}
		soft[i].GracePeriod = period
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := append(hard, soft...)
	for i := range out {
		out[i].MinReclaim = reclaim[out[i].Signal]
	}
	if s.EnforcePods {
		for _, t := range hard {
			if t.Signal == SignalMemoryAvailable {
				out = append(out, Threshold{Signal: SignalAllocatableMemoryAvailable, Value: t.Value, MinReclaim: reclaim[SignalMemoryAvailable]})
			}
		}
	}
	return out, nil
}

// CheckThresholds checks --eviction-hard or --eviction-soft.
func CheckThresholds(statements map[string]string) error {
	_, err := parseStatements(statements)
	return err
}

// parseStatements parses signal<value statements, in the order of the
// signals' names; 0% and 100% leave a signal out, as with the kubelet.
func parseStatements(statements map[string]string) ([]Threshold, error) {
	values, err := parseEach(statements, func(s string) (Value, bool, error) {
		if s == "0%" || s == "100%" {
			return Value{}, false, nil
		}
		v, err := parseValue(s, false)
		return v, true, err
	})
	var out []Threshold
	for _, name := range slices.Sorted(maps.Keys(statements)) {
		if v, ok := values[Signal(strings.TrimSpace(name))]; ok {
			out = append(out, Threshold{Signal: Signal(strings.TrimSpace(name)), Value: v})
		}
	}
	return out, err
}

// ParseGracePeriods parses --eviction-soft-grace-period: signal to a
// duration that is not negative.
func ParseGracePeriods(statements map[string]string) (map[Signal]time.Duration, error) {
	return parseEach(statements, func(s string) (time.Duration, bool, error) {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, false, fmt.Errorf("%q is not a duration such as 1m30s", s)
		}
		return d, true, nil
	})
}

// ParseMinimumReclaims parses --eviction-minimum-reclaim: signal to a
// quantity or a percentage, 0 allowed.
func ParseMinimumReclaims(statements map[string]string) (map[Signal]Value, error) {
	return parseEach(statements, func(s string) (Value, bool, error) {
		v, err := parseValue(s, true)
		return v, true, err
	})
}

// parseEach parses each statement's signal and, with parse, its value
// (keep false leaves it out), and reports every mistake, each naming its
// signal, in the order of the signals' names.
func parseEach[T any](statements map[string]string, parse func(string) (v T, keep bool, err error)) (map[Signal]T, error) {
	out := map[Signal]T{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(statements)) {
		signal, err := parseSignal(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		v, keep, err := parse(strings.TrimSpace(statements[name]))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		case keep:
			out[signal] = v
		}
	}
	return out, errors.Join(errs...)
}

func parseSignal(name string) (Signal, error) {
	s := Signal(strings.TrimSpace(name))
	if _, ok := signalResource[s]; !ok || s == SignalAllocatableMemoryAvailable {
		return "", fmt.Errorf("%q is not an eviction signal: want one of memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available", name)
	}
	return s, nil
}

// parseValue parses a quantity (100Mi, 1000) or a percentage (10%); a
// threshold must be above 0, a minimum reclaim may be 0.
func parseValue(s string, zeroOK bool) (Value, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(p, 32)
		if err != nil || f < 0 || f > 100 || (f == 0 && !zeroOK) {
			return Value{}, fmt.Errorf("%q is not a percentage from 0%% to 100%%", s)
		}
		return Value{Percentage: float32(f) / 100}, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() < 0 || (q.IsZero() && !zeroOK) {
		return Value{}, fmt.Errorf("%q is not a positive quantity such as 100Mi or a percentage such as 10%%", s)
	}
	return Value{Quantity: q.Value(), Format: q.Format}, nil
}
