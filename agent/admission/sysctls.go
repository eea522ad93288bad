package admission

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// ReasonSysctlForbidden is the kubelet's reason for a pod refused for a
// sysctl it may not set.
const ReasonSysctlForbidden = "SysctlForbidden"

// safeSysctls are the kubelet's safe sysctls (v1.36): namespaced, and with
// no effect on other pods of the node. Those with a kernel version are
// namespaced only from that version on.
var safeSysctls = []struct{ name, kernel string }{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", kernel: "3.16"},
	{name: "net.ipv4.tcp_keepalive_time", kernel: "4.5"},
	{name: "net.ipv4.tcp_fin_timeout", kernel: "4.6"},
	{name: "net.ipv4.tcp_keepalive_intvl", kernel: "4.5"},
	{name: "net.ipv4.tcp_keepalive_probes", kernel: "4.5"},
	{name: "net.ipv4.tcp_rmem", kernel: "4.15"},
	{name: "net.ipv4.tcp_wmem", kernel: "4.15"},
}

// SafeSysctls returns the kubelet's safe sysctls for a kernel of release
// kernel (/proc/sys/kernel/osrelease, "6.1.0-18-amd64"): those whose
// namespacing needs a newer kernel are left out, as are all of those that
// need one when the release cannot be read.
func SafeSysctls(kernel string) []string {
	v, err := version.ParseGeneric(strings.TrimSpace(kernel))
	var out []string
	for _, s := range safeSysctls {
		if s.kernel == "" || (err == nil && v.AtLeast(version.MustParseGeneric(s.kernel))) {
			out = append(out, s.name)
		}
	}
	return out
}

// sysctlPattern is a sysctl name or a pattern ending in "*", with dots or
// slashes as separators, as the API validates the kubelet's
// --allowed-unsafe-sysctls.
var sysctlPattern = regexp.MustCompile("^" + sysctlPatternFmt + "$")

const sysctlPatternFmt = `([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`

// sysctlMaxLength is the API's longest sysctl name.
const sysctlMaxLength = 253

// CheckSysctlPatterns reports the first of patterns (--allowed-unsafe-sysctls)
// that is not a valid sysctl name or pattern ("net.core.*") or not known
// to be namespaced, with the kubelet's message.
func CheckSysctlPatterns(patterns []string) error {
	_, err := newSysctlAllowlist(patterns)
	return err
}

// sysctlAllowlist is the kubelet's pattern allowlist: exact names and
// prefixes, each with the kernel namespace (IPC or Net) it lives in.
type sysctlAllowlist struct {
	names    map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

func newSysctlAllowlist(patterns []string) (*sysctlAllowlist, error) {
	w := &sysctlAllowlist{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range patterns {
		if len(p) > sysctlMaxLength || !sysctlPattern.MatchString(p) {
			return nil, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s", p, sysctlMaxLength, sysctlPatternFmt)
		}
		ns, nameOrPrefix, prefixed := utilsysctl.GetNamespace(p)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", nameOrPrefix)
		}
		if prefixed {
			w.prefixes[nameOrPrefix] = ns
		} else {
			w.names[nameOrPrefix] = ns
		}
	}
	return w, nil
}

// check is the kubelet's validateSysctl: name must be allowed, and one of
// the network (IPC) namespace not set in a pod on the host's network (IPC
// namespace).
func (w *sysctlAllowlist) check(name string, hostNet, hostIPC bool) error {
	name = utilsysctl.NormalizeName(name)
	ns, ok := w.names[name]
	if !ok {
		for p, pns := range w.prefixes {
			if strings.HasPrefix(name, p) {
				ns, ok = pns, true
				break
			}
		}
	}
	if !ok {
		return fmt.Errorf("%q not allowlisted", name)
	}
	if (ns == utilsysctl.IPCNamespace && hostIPC) || (ns == utilsysctl.NetNamespace && hostNet) {
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}

// Sysctls refuses a pod whose spec.securityContext.sysctls holds a sysctl
// that is neither safe (SafeSysctls(kernel)) nor allowed by unsafe
// (--allowed-unsafe-sysctls, names and patterns ending in "*"), or one of
// the network or IPC namespace in a pod that shares the host's, with the
// kubelet's reason and message. It fails for a pattern CheckSysctlPatterns
// refuses.
func Sysctls(kernel string, unsafe []string) (Handler, error) {
	w, err := newSysctlAllowlist(append(SafeSysctls(kernel), unsafe...))
	if err != nil {
		return nil, err
	}
	return func(pod *v1.Pod, _ []*v1.Pod) Result {
		sc := pod.Spec.SecurityContext
		if sc == nil {
			return Admitted
		}
		for _, s := range sc.Sysctls {
			if err := w.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
				return Result{Reason: ReasonSysctlForbidden, Message: fmt.Sprintf("forbidden sysctl: %v", err)}
			}
		}
		return Admitted
	}, nil
}
