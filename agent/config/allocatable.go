package config

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/minikubelet/minikubelet/agent/allocatable"
)

// The levels of --enforce-node-allocatable, as the kubelet's.
const (
	EnforcePods                     = "pods"
	EnforceKubeReserved             = "kube-reserved"
	EnforceSystemReserved           = "system-reserved"
	EnforceKubeReservedCompressible = "kube-reserved-compressible"
	EnforceSystemReservedCompress   = "system-reserved-compressible"
	EnforceNone                     = "none"
)

// Swap behaviours (memorySwap.swapBehavior).
const (
	SwapNoSwap      = "NoSwap"
	SwapLimitedSwap = "LimitedSwap"
)

// AllocatableConfig is node allocatable's and swap's part of Config: the
// kubelet's flags and fields of the same names.
type AllocatableConfig struct {
	// KubeReserved and SystemReserved are --kube-reserved and
	// --system-reserved: resource (cpu, memory, ephemeral-storage, pid)
	// to quantity, set aside from what pods get.
	KubeReserved   map[string]string
	SystemReserved map[string]string
	// EnforceNodeAllocatable is --enforce-node-allocatable: pods (the
	// pods cgroup's limits), kube-reserved and system-reserved (the
	// reserved cgroups' limits, or their -compressible cpu only), none.
	EnforceNodeAllocatable []string
	// KubeReservedCgroup and SystemReservedCgroup are the cgroups the
	// reserved enforcements limit; they must exist.
	KubeReservedCgroup   string
	SystemReservedCgroup string
	// FailSwapOn is --fail-swap-on: the agent refuses to start on a node
	// with swap on.
	FailSwapOn bool
	// MemorySwapBehavior is memorySwap.swapBehavior (config file only):
	// "" or NoSwap; LimitedSwap is refused.
	MemorySwapBehavior string
	// PodPidsLimit is --pod-max-pids: each pod cgroup's pids.max; -1 (or
	// 0) leaves it unlimited.
	PodPidsLimit int64
}

// defaultAllocatableConfig returns the kubelet's defaults.
func defaultAllocatableConfig() AllocatableConfig {
	return AllocatableConfig{EnforceNodeAllocatable: []string{EnforcePods}, FailSwapOn: true, PodPidsLimit: -1}
}

// addAllocatableFlags registers the flags.
func (c *AllocatableConfig) addAllocatableFlags(fs *flag.FlagSet) {
	fs.Var(&mapFlag{m: &c.KubeReserved, sep: "="}, "kube-reserved", "Resources reserved for Kubernetes' own daemons, resource=quantity separated by commas, e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000 (cpu, memory, ephemeral-storage and pid): left out of the Node's allocatable and of the pods cgroup's limits.")
	fs.Var(&mapFlag{m: &c.SystemReserved, sep: "="}, "system-reserved", "Resources reserved for the system's daemons, as --kube-reserved.")
	fs.Var((*listFlag)(&c.EnforceNodeAllocatable), "enforce-node-allocatable", "Which limits node allocatable writes, separated by commas: pods (the cgroup holding every pod gets the node's capacity less the reservations: cpu shares, memory and, when reserved, pids), kube-reserved and system-reserved (the cgroups --kube-reserved-cgroup and --system-reserved-cgroup get their reservation as limits; the -compressible forms cpu only), or none. pods needs --cgroups-per-qos.")
	fs.StringVar(&c.KubeReservedCgroup, "kube-reserved-cgroup", c.KubeReservedCgroup, "The existing cgroup, an absolute path such as /kube-reserved, that --enforce-node-allocatable=kube-reserved limits.")
	fs.StringVar(&c.SystemReservedCgroup, "system-reserved-cgroup", c.SystemReservedCgroup, "The existing cgroup, an absolute path such as /system-reserved, that --enforce-node-allocatable=system-reserved limits.")
	fs.BoolVar(&c.FailSwapOn, "fail-swap-on", c.FailSwapOn, "Refuse to start on a node with swap on (/proc/swaps lists a device). With false, pods run on such a node with swap as the kernel gives it: the agent does not limit containers' swap (see the README).")
	fs.Int64Var(&c.PodPidsLimit, "pod-max-pids", c.PodPidsLimit, "The largest number of processes (tasks) a pod may have: each pod cgroup's pids.max, so that a fork bomb stays within its pod. -1 leaves it unlimited.")
}

// EnforcePods reports whether the pods cgroup is limited to node
// allocatable (--enforce-node-allocatable has pods).
func (c *AllocatableConfig) EnforcePods() bool {
	return slices.Contains(c.EnforceNodeAllocatable, EnforcePods)
}

// validateAllocatable reports bad settings as the kubelet's validation
// does, each naming its flag; cgroupsPerQOS is --cgroups-per-qos.
func (c *AllocatableConfig) validateAllocatable(cgroupsPerQOS bool) []error {
	var errs []error
	if _, err := allocatable.ParseReserved(c.KubeReserved); err != nil {
		errs = append(errs, fmt.Errorf("--kube-reserved: %w", err))
	}
	if _, err := allocatable.ParseReserved(c.SystemReserved); err != nil {
		errs = append(errs, fmt.Errorf("--system-reserved: %w", err))
	}
	errs = append(errs, checkEnforce(c.EnforceNodeAllocatable, c.KubeReservedCgroup, c.SystemReservedCgroup, cgroupsPerQOS)...)
	for _, cg := range []struct{ flag, path string }{{"kube-reserved-cgroup", c.KubeReservedCgroup}, {"system-reserved-cgroup", c.SystemReservedCgroup}} {
		if cg.path != "" && !strings.HasPrefix(cg.path, "/") {
			errs = append(errs, fmt.Errorf("--%s: %q must be an absolute cgroup path such as /%s", cg.flag, cg.path, cg.flag[:len(cg.flag)-len("-cgroup")]))
		}
	}
	if err := checkSwapBehavior(c.MemorySwapBehavior); err != nil {
		errs = append(errs, fmt.Errorf("memorySwap.swapBehavior: %w", err))
	}
	return errs
}

// checkEnforce checks --enforce-node-allocatable as the kubelet does.
func checkEnforce(levels []string, kubeCgroup, systemCgroup string, cgroupsPerQOS bool) []error {
	var errs []error
	seen := map[string]bool{}
	for _, l := range levels {
		if seen[l] {
			errs = append(errs, fmt.Errorf("--enforce-node-allocatable: %q is given twice", l))
			continue
		}
		seen[l] = true
		switch l {
		case EnforcePods:
		case EnforceKubeReserved, EnforceKubeReservedCompressible:
			if kubeCgroup == "" {
				errs = append(errs, fmt.Errorf("--enforce-node-allocatable: %q needs --kube-reserved-cgroup, the cgroup to limit", l))
			}
		case EnforceSystemReserved, EnforceSystemReservedCompress:
			if systemCgroup == "" {
				errs = append(errs, fmt.Errorf("--enforce-node-allocatable: %q needs --system-reserved-cgroup, the cgroup to limit", l))
			}
		case EnforceNone:
			if len(levels) > 1 {
				errs = append(errs, errors.New("--enforce-node-allocatable: none cannot be given with another level"))
			}
			continue
		default:
			errs = append(errs, fmt.Errorf("--enforce-node-allocatable: %q is not one of pods, kube-reserved, kube-reserved-compressible, system-reserved, system-reserved-compressible, none", l))
			continue
		}
		if !cgroupsPerQOS {
			errs = append(errs, fmt.Errorf("--enforce-node-allocatable: %q needs --cgroups-per-qos (or give --enforce-node-allocatable=none)", l))
		}
	}
	for _, pair := range [][2]string{{EnforceKubeReserved, EnforceKubeReservedCompressible}, {EnforceSystemReserved, EnforceSystemReservedCompress}} {
		if seen[pair[0]] && seen[pair[1]] {
			errs = append(errs, fmt.Errorf("--enforce-node-allocatable: %q and %q cannot be given together", pair[0], pair[1]))
		}
	}
	return errs
}

// checkSwapBehavior accepts the swap behaviour minikubelet implements:
// none (NoSwap, the kubelet's default); LimitedSwap is refused rather than
// run as NoSwap.
func checkSwapBehavior(s string) error {
	switch s {
	case "", SwapNoSwap:
		return nil
	case SwapLimitedSwap:
		return errors.New("LimitedSwap is not supported by minikubelet: pods get no swap (NoSwap); leave it out or set NoSwap")
	}
	return fmt.Errorf("%q is not one of NoSwap, LimitedSwap", s)
}

// allocatableFileFields are the config file's fields of node allocatable
// and swap.
func allocatableFileFields() []fileField {
	return []fileField{
		field("kubeReserved", "kube-reserved", func(c *Config) *map[string]string { return &c.KubeReserved },
			func(kc *kcConfig) (map[string]string, bool) { return kc.KubeReserved, kc.KubeReserved != nil },
			func(m map[string]string) error { _, err := allocatable.ParseReserved(m); return err }),
		field("systemReserved", "system-reserved", func(c *Config) *map[string]string { return &c.SystemReserved },
			func(kc *kcConfig) (map[string]string, bool) { return kc.SystemReserved, kc.SystemReserved != nil },
			func(m map[string]string) error { _, err := allocatable.ParseReserved(m); return err }),
		field("enforceNodeAllocatable", "enforce-node-allocatable", func(c *Config) *[]string { return &c.EnforceNodeAllocatable },
			func(kc *kcConfig) ([]string, bool) {
				return kc.EnforceNodeAllocatable, kc.EnforceNodeAllocatable != nil
			}, nil),
		field("kubeReservedCgroup", "kube-reserved-cgroup", func(c *Config) *string { return &c.KubeReservedCgroup },
			str(func(kc *kcConfig) string { return kc.KubeReservedCgroup }), checkCgroupRoot),
		field("systemReservedCgroup", "system-reserved-cgroup", func(c *Config) *string { return &c.SystemReservedCgroup },
			str(func(kc *kcConfig) string { return kc.SystemReservedCgroup }), checkCgroupRoot),
		field("failSwapOn", "fail-swap-on", func(c *Config) *bool { return &c.FailSwapOn },
			boolPtr(func(kc *kcConfig) *bool { return kc.FailSwapOn }), nil),
		// No flag: the kubelet has none.
		field("memorySwap.swapBehavior", "", func(c *Config) *string { return &c.MemorySwapBehavior },
			str(func(kc *kcConfig) string { return kc.MemorySwap.SwapBehavior }), checkSwapBehavior),
		field("podPidsLimit", "pod-max-pids", func(c *Config) *int64 { return &c.PodPidsLimit },
			func(kc *kcConfig) (int64, bool) {
				if kc.PodPidsLimit == nil {
					return 0, false
				}
				return *kc.PodPidsLimit, true
			}, nil),
	}
}
