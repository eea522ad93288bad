package config

import (
	"flag"
	"fmt"
	"strings"

	"github.com/minikubelet/minikubelet/agent/admission"
)

// PodsConfig is what the node lets pods ask for: the kubelet's flags of the
// same names.
type PodsConfig struct {
	// AllowedUnsafeSysctls are the sysctls, or patterns ending in "*"
	// ("net.core.*"), that pods may set besides the kubelet's safe ones
	// (--allowed-unsafe-sysctls); each must be namespaced.
	AllowedUnsafeSysctls []string
}

// addPodsFlags registers the flags of what pods may ask for.
func (c *PodsConfig) addPodsFlags(fs *flag.FlagSet) {
	fs.Var((*listFlag)(&c.AllowedUnsafeSysctls), "allowed-unsafe-sysctls", "Unsafe sysctls, or sysctl patterns ending in *, that pods may set in spec.securityContext.sysctls besides the safe ones, separated by commas (net.core.somaxconn,kernel.msg*). Only namespaced sysctls (kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*, net.*) may be allowed; a pod asking for any other is refused with reason SysctlForbidden.")
}

// validatePods reports bad values of what pods may ask for.
func (c *PodsConfig) validatePods() []error {
	if err := admission.CheckSysctlPatterns(c.AllowedUnsafeSysctls); err != nil {
		return []error{fmt.Errorf("--allowed-unsafe-sysctls: %w", err)}
	}
	return nil
}

// listFlag is a list of strings separated by commas; each use replaces
// the list.
type listFlag []string

func (l *listFlag) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *listFlag) Set(s string) error {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	*l = out
	return nil
}
