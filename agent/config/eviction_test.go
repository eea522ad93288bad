package config

import (
	"flag"
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/agent/eviction"
)

func parseFlags(t *testing.T, args ...string) Config {
	t.Helper()
	cfg := Default()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return cfg
}

func TestEvictionFlags(t *testing.T) {
	cfg := parseFlags(t)
	if s := cfg.EvictionSettings(false); !maps.Equal(s.Hard, eviction.DefaultHard()) {
		t.Errorf("default hard thresholds %v", s.Hard)
	}
	if !cfg.KernelMemcgNotification || !cfg.EvictStaticPods || cfg.EvictionPressureTransitionPeriod != 5*time.Minute {
		t.Errorf("defaults %+v", cfg.EvictionConfig)
	}
	cfg = parseFlags(t, "--eviction-hard", "memory.available<1Gi,nodefs.available<5%", "--eviction-hard", "pid.available<1000",
		"--eviction-soft", "memory.available<2Gi", "--eviction-soft-grace-period", "memory.available=1m",
		"--eviction-minimum-reclaim", "memory.available=100Mi", "--kernel-memcg-notification=false", "--evict-static-pods=false")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"memory.available": "1Gi", "nodefs.available": "5%", "pid.available": "1000"}
	if !maps.Equal(cfg.EvictionHard, want) {
		t.Errorf("--eviction-hard %v, want %v: given, it replaces the defaults", cfg.EvictionHard, want)
	}
	ts, err := eviction.ParseThresholds(cfg.EvictionSettings(true))
	if err != nil || len(ts) != 5 {
		t.Errorf("thresholds %v (%v): want 3 hard, 1 soft, 1 allocatable", ts, err)
	}
	if cfg.KernelMemcgNotification || cfg.EvictStaticPods {
		t.Error("boolean flags not taken")
	}

	bad := parseFlags(t, "--eviction-hard", "memory.avail<1Gi", "--eviction-soft", "memory.available<2Gi", "--eviction-monitoring-period", "0s")
	err = bad.Validate()
	for _, w := range []string{`--eviction-hard: "memory.avail" is not an eviction signal`, "--eviction-monitoring-period: must be positive"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate: %v; want %q", err, w)
		}
	}
	soft := parseFlags(t, "--eviction-soft", "memory.available<2Gi")
	if err := soft.Validate(); err == nil || !strings.Contains(err.Error(), "--eviction-soft: memory.available: needs a grace period") {
		t.Errorf("soft threshold without a grace period: %v", err)
	}
}

func TestEvictionFile(t *testing.T) {
	got, _, err := loadWith(t, header+`
evictionHard: {memory.available: 500Mi}
mergeDefaultEvictionSettings: true
evictionSoft: {nodefs.available: 20%}
evictionSoftGracePeriod: {nodefs.available: 2m}
evictionMinimumReclaim: {nodefs.available: 1Gi}
evictionMaxPodGracePeriod: 30
evictionPressureTransitionPeriod: 1m
localStorageCapacityIsolation: false
`, "--eviction-max-pod-grace-period", "5")
	if err != nil {
		t.Fatal(err)
	}
	hard := got.EvictionSettings(false).Hard
	if hard["memory.available"] != "500Mi" || hard["nodefs.available"] != "10%" || hard["imagefs.inodesFree"] != "5%" {
		t.Errorf("merged hard thresholds %v", hard)
	}
	if got.EvictionSoftGracePeriod["nodefs.available"] != "2m" || got.EvictionMinimumReclaim["nodefs.available"] != "1Gi" ||
		got.EvictionPressureTransitionPeriod != time.Minute || got.LocalStorageCapacityIsolation || got.EvictionMaxPodGracePeriod != 5 {
		t.Errorf("eviction settings %+v (the flag's max pod grace period wins)", got.EvictionConfig)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}

	for content, want := range map[string]string{
		"evictionHard: {memory.available: lots}\n": `evictionHard: memory.available: "lots" is not a positive quantity`,
		"evictionSoft: {memory.available: 1Gi}\n":  "evictionSoft: memory.available: each needs a grace period in evictionSoftGracePeriod",
	} {
		if _, _, err := loadWith(t, header+content); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", content, err, want)
		}
	}
}
