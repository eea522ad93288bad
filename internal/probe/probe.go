package probe

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/minikubelet/minikubelet/internal/version"
)

// Result is the outcome of one check.
type Result int

// Results.
const (
	// Unknown: the check could not be made; it says nothing about the
	// probed program.
	Unknown Result = iota
	// Success: the program answered as healthy.
	Success
	// Failure: the program answered as unhealthy, did not answer in time,
	// or refused the connection.
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	default:
		return "unknown"
	}
}

// maxDetail bounds what a detail quotes of a program's output.
const maxDetail = 1024

// ResolvePort turns a handler's port, a number or the name of one of the
// container's ports, into a number.
func ResolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("port %q is not a port of container %q", p.StrVal, c.Name)
}

// Clip trims output and cuts it to a length fit for a log line.
func Clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > maxDetail {
		s = s[:maxDetail] + "..."
	}
	return s
}

// UserAgent is what HTTP and gRPC probes send: "kube-probe/<version>" as
// the kubelet's (programs match the prefix to tell probes from users).
func UserAgent() string { return "kube-probe/" + version.Version }

// HookUserAgent is what HTTP lifecycle hooks send, as the kubelet's.
func HookUserAgent() string { return "kube-lifecycle/" + version.Version }
