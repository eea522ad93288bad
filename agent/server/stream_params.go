package server

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// streamOptions are the query parameters of /exec and /attach.
type streamOptions struct {
	// command is exec's command and its arguments (command, repeated).
	command []string
	// stdin, stdout and stderr say which streams the client wants;
	// tty whether the command runs on a terminal (then stderr is off: a
	// terminal has one output stream).
	stdin, stdout, stderr, tty bool
}

// parseStreamOptions reads the query of /exec and /attach: the kubelet's
// names (input, output, error, tty: "1" is true, as the apiserver sends
// them), or stdin, stdout and stderr as kubectl's own options name them;
// true and false are read as well. At least one stream is required.
func parseStreamOptions(q url.Values) (streamOptions, error) {
	var errs []error
	flag := func(names ...string) bool {
		on := false
		for _, name := range names {
			if !q.Has(name) {
				continue
			}
			v, err := strconv.ParseBool(q.Get(name))
			if err != nil {
				errs = append(errs, fmt.Errorf("query parameter %s=%q: want 1 or 0, true or false", name, q.Get(name)))
			}
			on = on || v
		}
		return on
	}
	o := streamOptions{
		command: q["command"],
		stdin:   flag("input", "stdin"),
		stdout:  flag("output", "stdout"),
		stderr:  flag("error", "stderr"),
		tty:     flag("tty"),
	}
	if err := errors.Join(errs...); err != nil {
		return o, err
	}
	if o.tty {
		o.stderr = false
	}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, errors.New("you must specify at least 1 of stdin, stdout, stderr (query parameters input, output, error)")
	}
	return o, nil
}

// parsePorts reads the port parameters of a WebSocket port-forward: each
// one a port or a comma-separated list of them. SPDY clients name their
// ports in their streams' headers instead.
func parsePorts(q url.Values) ([]int32, error) {
	values := q["port"]
	if len(values) == 0 {
		return nil, errors.New(`query parameter "port" is required`)
	}
	var ports []int32
	for _, v := range values {
		for p := range strings.SplitSeq(v, ",") {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("query parameter port=%q: %q is not a port (1-65535)", v, p)
			}
			ports = append(ports, int32(n))
		}
	}
	return ports, nil
}

// parseRun reads the query of /run: cmd, split at spaces as the kubelet
// splits it, and timeout, a Go duration or a number of seconds (the
// runtime counts whole seconds, so it is rounded up to one); 0, the
// default, sets none.
func parseRun(q url.Values) ([]string, time.Duration, error) {
	cmd := strings.Fields(q.Get("cmd"))
	if len(cmd) == 0 {
		return nil, 0, errors.New(`query parameter "cmd" is required: the command and its arguments, separated by spaces`)
	}
	if !q.Has("timeout") {
		return cmd, 0, nil
	}
	raw := q.Get("timeout")
	d, err := time.ParseDuration(raw)
	if err != nil {
		secs, serr := strconv.ParseUint(raw, 10, 32)
		if serr != nil {
			return nil, 0, fmt.Errorf("query parameter timeout=%q: want a duration (30s, 2m) or a number of seconds", raw)
		}
		d = time.Duration(secs) * time.Second
	}
	if d < 0 {
		return nil, 0, fmt.Errorf("query parameter timeout=%q: must not be negative", raw)
	}
	return cmd, time.Duration(math.Ceil(d.Seconds())) * time.Second, nil
}

// requireUpgrade checks that r asks to switch protocols, as every
// streaming endpoint but /run requires.
func requireUpgrade(r *http.Request) error {
	if !httpstream.IsUpgradeRequest(r) || r.Header.Get("Upgrade") == "" {
		return errors.New("upgrade request required: this endpoint speaks SPDY/3.1 or WebSocket (kubectl exec, attach and port-forward do; so do minikubelet exec and attach)")
	}
	return nil
}

func isWebSocketRequest(r *http.Request) bool { return wsstream.IsWebSocketRequest(r) }

// isV5WebSocketRequest reports a WebSocket client that offers
// v5.channel.k8s.io, which the runtime does not speak: the agent
// translates it to SPDY as the kubelet does.
func isV5WebSocketRequest(r *http.Request) bool {
	return wsstream.IsWebSocketRequestWithStreamCloseProtocol(r)
}

// isTunnelingRequest reports a port-forward client that tunnels SPDY
// through a WebSocket (SPDY/3.1+portforward.k8s.io).
func isTunnelingRequest(r *http.Request) bool {
	return wsstream.IsWebSocketRequestWithTunnelingProtocol(r)
}
