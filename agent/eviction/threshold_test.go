package eviction

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseThresholdsDefaults(t *testing.T) {
	ts, err := ParseThresholds(ThresholdSettings{Hard: DefaultHard(), EnforcePods: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[Signal]string{}
	for _, th := range ts {
		if !th.hard() {
			t.Errorf("%s: not hard", th)
		}
		got[th.Signal] = th.Value.String()
	}
	want := map[Signal]string{
		SignalMemoryAvailable:            "100Mi",
		SignalAllocatableMemoryAvailable: "100Mi",
		SignalNodeFsAvailable:            "10%",
		SignalNodeFsInodesFree:           "5%",
		SignalImageFsAvailable:           "15%",
		SignalImageFsInodesFree:          "5%",
	}
	if len(got) != len(want) {
		t.Errorf("thresholds %v, want %v", got, want)
	}
	for s, v := range want {
		if got[s] != v {
			t.Errorf("%s: %q, want %q", s, got[s], v)
		}
	}
}

func TestParseThresholds(t *testing.T) {
	ts, err := ParseThresholds(ThresholdSettings{
		Hard:            map[string]string{"memory.available": "1Gi", "nodefs.available": "0%", "pid.available": "100%", "imagefs.available": "20%"},
		Soft:            map[string]string{"memory.available": "2Gi"},
		SoftGracePeriod: map[string]string{"memory.available": "1m30s"},
		MinimumReclaim:  map[string]string{"memory.available": "500Mi", "imagefs.available": "25%"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 {
		t.Fatalf("thresholds %v: want memory hard and soft and imagefs (0%% and 100%% turn a signal off), no allocatable one", ts)
	}
	var soft Threshold
	for _, th := range ts {
		if !th.hard() {
			soft = th
		}
	}
	if soft.Signal != SignalMemoryAvailable || soft.GracePeriod != 90*time.Second || soft.String() != "memory.available<2Gi for 1m30s" {
		t.Errorf("soft threshold %v", soft)
	}
	if mr := soft.MinReclaim.Amount(0); mr.String() != "500Mi" {
		t.Errorf("minimum reclaim %s, want 500Mi", mr.String())
	}
	for _, th := range ts {
		if th.Signal == SignalImageFsAvailable {
			if q := th.Value.Amount(1000); q.Value() != 200 {
				t.Errorf("20%% of 1000 = %d", q.Value())
			}
			if q := th.MinReclaim.Amount(1000); q.Value() != 250 {
				t.Errorf("minimum reclaim 25%% of 1000 = %d", q.Value())
			}
		}
	}
}

func TestParseThresholdsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    ThresholdSettings
		want []string
	}{
		{"unknown signal", ThresholdSettings{Hard: map[string]string{"memory.avail": "1Gi"}}, []string{"eviction-hard", `"memory.avail" is not an eviction signal`}},
		{"allocatable named", ThresholdSettings{Hard: map[string]string{"allocatableMemory.available": "1Gi"}}, []string{"is not an eviction signal"}},
		{"bad quantity", ThresholdSettings{Hard: map[string]string{"memory.available": "lots"}}, []string{"memory.available", `"lots" is not a positive quantity`}},
		{"zero", ThresholdSettings{Hard: map[string]string{"memory.available": "0"}}, []string{"not a positive quantity"}},
		{"negative", ThresholdSettings{Hard: map[string]string{"memory.available": "-1Gi"}}, []string{"not a positive quantity"}},
		{"percentage", ThresholdSettings{Hard: map[string]string{"nodefs.available": "150%"}}, []string{"not a percentage"}},
		{"soft without grace", ThresholdSettings{Soft: map[string]string{"memory.available": "1Gi"}}, []string{"eviction-soft: memory.available: needs a grace period"}},
		{"bad grace", ThresholdSettings{SoftGracePeriod: map[string]string{"memory.available": "1x"}}, []string{"eviction-soft-grace-period", "not a duration"}},
		{"bad reclaim", ThresholdSettings{MinimumReclaim: map[string]string{"nodefs.available": "-5%"}}, []string{"eviction-minimum-reclaim", "not a percentage"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseThresholds(tc.s)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestThresholdsMetMinReclaim(t *testing.T) {
	th := Threshold{Signal: SignalMemoryAvailable, Value: Value{Quantity: 100, Format: resource.BinarySI}, MinReclaim: Value{Quantity: 50, Format: resource.BinarySI}}
	obs := func(avail int64) observations {
		return observations{SignalMemoryAvailable: {available: avail, capacity: 1000}}
	}
	for _, tc := range []struct {
		avail      int64
		minReclaim bool
		met        bool
	}{
		{99, false, true}, {100, false, false}, {120, false, false}, {120, true, true}, {150, true, false},
	} {
		if got := len(thresholdsMet([]Threshold{th}, obs(tc.avail), tc.minReclaim)) == 1; got != tc.met {
			t.Errorf("available %d, min reclaim %v: met %v, want %v", tc.avail, tc.minReclaim, got, tc.met)
		}
	}
	if len(thresholdsMet([]Threshold{th}, observations{}, false)) != 0 {
		t.Error("a signal not observed meets its threshold")
	}
}
