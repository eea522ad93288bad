package podworkers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
)

// execer runs a command in a container (CRI ExecSync).
type execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
}

// hookRunner runs a container's lifecycle handlers (postStart, preStop):
// exec in the container, an HTTP GET, or a sleep. Safe for concurrent use.
type hookRunner struct {
	exec   execer
	client *http.Client
	clock  clock.Clock
	hostIP string
}

// maxHookOutput bounds what a failed handler's error quotes of its output.
const maxHookOutput = 1024

func newHookRunner(exec execer, c clock.Clock, hostIP string) *hookRunner {
	return &hookRunner{
		exec:  exec,
		clock: c,
		client: &http.Client{
			// As for probes: follow redirects only to the same host.
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 10 || req.URL.Host != via[0].URL.Host {
					return http.ErrUseLastResponse
				}
				return nil
			},
		},
		hostIP: hostIP,
	}
}

// run runs handler for container c (running as containerID) of pod, and
// gives up after timeout. podIPs are the pod's addresses (empty for a
// host-network pod).
func (h *hookRunner) run(ctx context.Context, pod *v1.Pod, c *v1.Container, containerID string, handler *v1.LifecycleHandler, podIPs []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case handler.Exec != nil:
		stdout, stderr, err := h.exec.ExecSync(ctx, containerID, handler.Exec.Command, timeout)
		if err != nil {
			return fmt.Errorf("exec %q: %w (output: %s)", handler.Exec.Command, err, clip(append(stdout, stderr...)))
		}
		return nil
	case handler.HTTPGet != nil:
		return h.httpGet(ctx, pod, c, handler.HTTPGet, podIPs)
	case handler.Sleep != nil:
		select {
		case <-h.clock.After(time.Duration(handler.Sleep.Seconds) * time.Second):
			return nil
		case <-ctx.Done():
			return fmt.Errorf("sleep %ds: %w", handler.Sleep.Seconds, ctx.Err())
		}
	case handler.TCPSocket != nil:
		return errors.New("tcpSocket is not a supported lifecycle handler")
	default:
		return errors.New("lifecycle handler has no action")
	}
}

func (h *hookRunner) httpGet(ctx context.Context, pod *v1.Pod, c *v1.Container, get *v1.HTTPGetAction, podIPs []string) error {
	host := get.Host
	if host == "" {
		switch {
		case pod.Spec.HostNetwork || len(podIPs) == 0:
			host = h.hostIP
		default:
			host = podIPs[0]
		}
	}
	port, err := resolvePort(get.Port, c)
	if err != nil {
		return err
	}
	scheme := strings.ToLower(string(get.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := get.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	target := u.String() + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("http get %s: %w", target, err)
	}
	for _, hdr := range get.HTTPHeaders {
		if strings.EqualFold(hdr.Name, "Host") {
			req.Host = hdr.Value
			continue
		}
		req.Header.Add(hdr.Name, hdr.Value)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("http get %s: %w", target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxHookOutput))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("http get %s: HTTP %d: %s", target, resp.StatusCode, clip(body))
	}
	return nil
}

// resolvePort turns a handler's port, a number or the name of one of the
// container's ports, into a number.
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
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

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > maxHookOutput {
		s = s[:maxHookOutput] + "..."
	}
	return s
}
