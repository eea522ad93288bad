package config

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/eviction"
)

// EvictionConfig is node-pressure eviction's part of Config: the
// kubelet's flags of the same names, and two of minikubelet's own
// (EvictionMonitoringPeriod, EvictStaticPods).
type EvictionConfig struct {
	// EvictionHard is --eviction-hard: signal to threshold; nil takes the
	// kubelet's defaults (eviction.DefaultHard), a map replaces them all
	// unless MergeDefaultEvictionSettings.
	EvictionHard map[string]string
	// EvictionSoft and EvictionSoftGracePeriod are --eviction-soft and
	// --eviction-soft-grace-period; each soft threshold needs a grace.
	EvictionSoft            map[string]string
	EvictionSoftGracePeriod map[string]string
	// EvictionMinimumReclaim is --eviction-minimum-reclaim.
	EvictionMinimumReclaim map[string]string
	// MergeDefaultEvictionSettings (config file only, as the kubelet's)
	// fills the signals EvictionHard leaves out with the defaults.
	MergeDefaultEvictionSettings bool
	// EvictionMaxPodGracePeriod is --eviction-max-pod-grace-period, in
	// seconds.
	EvictionMaxPodGracePeriod int
	// EvictionPressureTransitionPeriod is
	// --eviction-pressure-transition-period.
	EvictionPressureTransitionPeriod time.Duration
	// EvictionMonitoringPeriod is how often the signals are measured (the
	// kubelet's is fixed at 10s).
	EvictionMonitoringPeriod time.Duration
	// KernelMemcgNotification is --kernel-memcg-notification: the kernel
	// wakes the eviction manager when a memory threshold is crossed. On
	// by default here (off in the kubelet).
	KernelMemcgNotification bool
	// LocalStorageCapacityIsolation is --local-storage-capacity-isolation:
	// ephemeral-storage limits and emptyDir sizeLimits are enforced.
	LocalStorageCapacityIsolation bool
	// EvictStaticPods is --evict-static-pods: static pods are evicted
	// unless critical by priority, and started again once their pressure
	// clears; false is the kubelet's rule (static pods are critical).
	EvictStaticPods bool
}

// defaultEvictionConfig returns the defaults: the kubelet's, but for
// KernelMemcgNotification and EvictStaticPods.
func defaultEvictionConfig() EvictionConfig {
	return EvictionConfig{
		EvictionPressureTransitionPeriod: 5 * time.Minute,
		EvictionMonitoringPeriod:         eviction.DefaultMonitoringPeriod,
		KernelMemcgNotification:          true,
		LocalStorageCapacityIsolation:    true,
		EvictStaticPods:                  true,
	}
}

// addEvictionFlags registers the eviction flags.
func (c *EvictionConfig) addEvictionFlags(fs *flag.FlagSet) {
	fs.Var(&mapFlag{m: &c.EvictionHard, sep: "<"}, "eviction-hard", "Hard eviction thresholds, signal<quantity or signal<percentage separated by commas, e.g. memory.available<1Gi,nodefs.available<10%: when one is met, pods are evicted at once with no grace period. Signals: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available; 0% or 100% turns one off. Given, it replaces the defaults (memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<5%).")
	fs.Var(&mapFlag{m: &c.EvictionSoft, sep: "<"}, "eviction-soft", "Soft eviction thresholds, as --eviction-hard: a pod is evicted once one has been met for its grace period (--eviction-soft-grace-period), with a grace of at most --eviction-max-pod-grace-period.")
	fs.Var(&mapFlag{m: &c.EvictionSoftGracePeriod, sep: "="}, "eviction-soft-grace-period", "How long each soft eviction threshold must be met before a pod is evicted, e.g. memory.available=1m30s.")
	fs.Var(&mapFlag{m: &c.EvictionMinimumReclaim, sep: "="}, "eviction-minimum-reclaim", "How far above its threshold a signal must come back before evictions for it stop, e.g. memory.available=500Mi,imagefs.available=2Gi.")
	fs.IntVar(&c.EvictionMaxPodGracePeriod, "eviction-max-pod-grace-period", c.EvictionMaxPodGracePeriod, "The longest grace period, in seconds, of a pod evicted for a soft threshold (the pod's own when shorter); negative defers to the pod's own.")
	fs.DurationVar(&c.EvictionPressureTransitionPeriod, "eviction-pressure-transition-period", c.EvictionPressureTransitionPeriod, "How long a pressure condition (MemoryPressure, DiskPressure, PIDPressure) holds after its thresholds stop being met; also how long an evicted static pod waits once its pressure cleared.")
	fs.DurationVar(&c.EvictionMonitoringPeriod, "eviction-monitoring-period", c.EvictionMonitoringPeriod, "How often the eviction signals are measured (memory thresholds also wake the agent through kernel notifications). Not a kubelet flag: the kubelet's period is fixed at 10s.")
	fs.BoolVar(&c.KernelMemcgNotification, "kernel-memcg-notification", c.KernelMemcgNotification, "Have the kernel notify the agent when a memory eviction threshold is crossed (cgroup v1 memory thresholds; PSI triggers on cgroup v2), besides measuring every --eviction-monitoring-period. On by default (the kubelet's default is off); a config file can only turn it on (false there is the default): use the flag to turn it off.")
	fs.BoolVar(&c.LocalStorageCapacityIsolation, "local-storage-capacity-isolation", c.LocalStorageCapacityIsolation, "Evict pods over their ephemeral-storage limits or an emptyDir's sizeLimit.")
	fs.BoolVar(&c.EvictStaticPods, "evict-static-pods", c.EvictStaticPods, "Evict static pods under node pressure by the same rules as other pods, unless critical by priority (priorityClassName system-node-critical or system-cluster-critical), and start them again, with back-off, once the pressure has cleared for --eviction-pressure-transition-period. false is the kubelet's rule: every static pod is critical, never evicted.")
}

// EvictionSettings are the eviction thresholds' settings, the defaults
// applied: enforcePods says whether --enforce-node-allocatable contains
// pods.
func (c *EvictionConfig) EvictionSettings(enforcePods bool) eviction.ThresholdSettings {
	hard := c.EvictionHard
	if hard == nil {
		hard = eviction.DefaultHard()
	} else if c.MergeDefaultEvictionSettings {
		hard = maps.Clone(hard)
		for k, v := range eviction.DefaultHard() {
			if _, ok := hard[k]; !ok {
				hard[k] = v
			}
		}
	}
	return eviction.ThresholdSettings{
		Hard:            hard,
		Soft:            c.EvictionSoft,
		SoftGracePeriod: c.EvictionSoftGracePeriod,
		MinimumReclaim:  c.EvictionMinimumReclaim,
		EnforcePods:     enforcePods,
	}
}

// validateEviction reports bad eviction settings, each naming its flag.
func (c *EvictionConfig) validateEviction() []error {
	var errs []error
	if _, err := eviction.ParseThresholds(c.EvictionSettings(false)); err != nil {
		for _, e := range flatten(err) {
			errs = append(errs, fmt.Errorf("--%w", e))
		}
	}
	if c.EvictionPressureTransitionPeriod < 0 {
		errs = append(errs, fmt.Errorf("--eviction-pressure-transition-period: must not be negative, got %v", c.EvictionPressureTransitionPeriod))
	}
	if c.EvictionMonitoringPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--eviction-monitoring-period: must be positive, got %v", c.EvictionMonitoringPeriod))
	}
	return errs
}

// evictionFileFields are the config file's eviction fields.
func evictionFileFields() []fileField {
	stringMap := func(name, flag string, ptr func(*Config) *map[string]string, get func(*kcConfig) map[string]string, check func(map[string]string) error) fileField {
		return field(name, flag, ptr, func(kc *kcConfig) (map[string]string, bool) { m := get(kc); return m, m != nil }, check)
	}
	return []fileField{
		stringMap("evictionHard", "eviction-hard", func(c *Config) *map[string]string { return &c.EvictionHard },
			func(kc *kcConfig) map[string]string { return kc.EvictionHard }, eviction.CheckThresholds),
		stringMap("evictionSoft", "eviction-soft", func(c *Config) *map[string]string { return &c.EvictionSoft },
			func(kc *kcConfig) map[string]string { return kc.EvictionSoft }, eviction.CheckThresholds),
		stringMap("evictionSoftGracePeriod", "eviction-soft-grace-period", func(c *Config) *map[string]string { return &c.EvictionSoftGracePeriod },
			func(kc *kcConfig) map[string]string { return kc.EvictionSoftGracePeriod },
			func(m map[string]string) error { _, err := eviction.ParseGracePeriods(m); return err }),
		stringMap("evictionMinimumReclaim", "eviction-minimum-reclaim", func(c *Config) *map[string]string { return &c.EvictionMinimumReclaim },
			func(kc *kcConfig) map[string]string { return kc.EvictionMinimumReclaim },
			func(m map[string]string) error { _, err := eviction.ParseMinimumReclaims(m); return err }),
		// No flag: the kubelet has none.
		field("mergeDefaultEvictionSettings", "", func(c *Config) *bool { return &c.MergeDefaultEvictionSettings },
			boolPtr(func(kc *kcConfig) *bool { return kc.MergeDefaultEvictionSettings }), nil),
		field("evictionMaxPodGracePeriod", "eviction-max-pod-grace-period", func(c *Config) *int { return &c.EvictionMaxPodGracePeriod },
			func(kc *kcConfig) (int, bool) {
				return int(kc.EvictionMaxPodGracePeriod), kc.EvictionMaxPodGracePeriod != 0
			}, nil),
		field("evictionPressureTransitionPeriod", "eviction-pressure-transition-period", func(c *Config) *time.Duration { return &c.EvictionPressureTransitionPeriod },
			duration(func(kc *kcConfig) metav1.Duration { return kc.EvictionPressureTransitionPeriod }), checkNotNegative),
		// false cannot be told from a field left out (a plain bool).
		field("kernelMemcgNotification", "kernel-memcg-notification", func(c *Config) *bool { return &c.KernelMemcgNotification },
			func(kc *kcConfig) (bool, bool) { return kc.KernelMemcgNotification, kc.KernelMemcgNotification }, nil),
		field("localStorageCapacityIsolation", "local-storage-capacity-isolation", func(c *Config) *bool { return &c.LocalStorageCapacityIsolation },
			boolPtr(func(kc *kcConfig) *bool { return kc.LocalStorageCapacityIsolation }), nil),
	}
}

// checkSoftGrace checks, once the file's fields are read, that each soft
// threshold has its grace period, naming the file's fields.
func checkSoftGrace(c *Config) error {
	var missing []string
	for _, s := range slices.Sorted(maps.Keys(c.EvictionSoft)) {
		if _, ok := c.EvictionSoftGracePeriod[s]; !ok {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("evictionSoft: %s: each needs a grace period in evictionSoftGracePeriod (e.g. %s: 1m30s)", strings.Join(missing, ", "), missing[0])
	}
	return nil
}

// mapFlag is a flag of key<sep>value pairs separated by commas, as the
// kubelet's --eviction-hard (sep "<") and --eviction-soft-grace-period
// (sep "="). Repeating it adds pairs; the first use replaces the default.
type mapFlag struct {
	m   *map[string]string
	sep string
	set bool
}

func (f *mapFlag) String() string {
	if f == nil || f.m == nil || *f.m == nil {
		return ""
	}
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(*f.m)) {
		pairs = append(pairs, k+f.sep+(*f.m)[k])
	}
	return strings.Join(pairs, ",")
}

func (f *mapFlag) Set(s string) error {
	if !f.set || *f.m == nil {
		*f.m = map[string]string{}
		f.set = true
	}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, f.sep)
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return fmt.Errorf("%q is not key%svalue", pair, f.sep)
		}
		(*f.m)[k] = v
	}
	return nil
}
