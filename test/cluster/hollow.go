package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
	"github.com/minikubelet/minikubelet/test/freeport"
)

// HollowKind is what runs a hollow node: a node agent with its real
// apiserver code paths against an in-memory container runtime, as
// Kubernetes' kubemark simulates nodes.
type HollowKind string

// The hollow node kinds.
const (
	// HollowMinikubelet is minikubelet in node mode against a fakecri
	// process of its own (test/scale/cmd/fakecri), with pod cgroups and
	// block I/O accounting off: it touches no cgroup, mount or network of
	// the host.
	HollowMinikubelet HollowKind = "minikubelet"
	// HollowKubemark is kubemark's hollow kubelet (kubemark
	// --morph=kubelet): the kubelet against cri-client's fake runtime in the
	// same process, with a stub container manager and fake mounter. It runs
	// in a mount namespace of its own whose /tmp is the node's directory
	// (see kubemarkNamespace).
	HollowKubemark HollowKind = "kubemark"
)

// kubemarkNamespace is the shell script that runs kubemark ($0, with its
// flags after the first two arguments) in a mount namespace of its own
// (unshare --mount) whose /tmp is the node's directory $1: kubemark puts
// its root dir and its fake runtime's socket in /tmp whatever $TMPDIR
// says, and they then go with the node's directory. The cluster's
// directory $2, where the node's kubeconfig and certificates are, is
// bound at its own path inside the new /tmp when it lies under /tmp. exec
// keeps the PID: the harness measures kubemark itself.
const kubemarkNamespace = `set -e
tmp=$1 dir=$2
shift 2
case "$dir" in /tmp/*)
	mkdir -p "$tmp/${dir#/tmp/}"
	mount --bind "$dir" "$tmp/${dir#/tmp/}" ;;
esac
mount --rbind "$tmp" /tmp
exec "$0" "$@"`

// Bounds of hollow nodes.
const (
	maxHollowNodes   = 256
	hollowSocketWait = 10 * time.Second
	hollowReadyPoll  = 2 * time.Second
	hollowParallel   = 10
)

// HollowOptions say which hollow nodes to start.
type HollowOptions struct {
	// Kind is what runs the nodes. Required.
	Kind HollowKind
	// Count is how many nodes (1 to 256), named <Prefix>-000 and on.
	Count  int
	Prefix string
	// Binary is minikubelet's binary (HollowMinikubelet) or kubemark's.
	// Required.
	Binary string
	// FakeCRI is fakecri's binary; required for HollowMinikubelet.
	FakeCRI string
	// Args are more flags for each agent, after the harness's.
	Args []string
	// Parallel is how many nodes start at once; 10 when 0.
	Parallel int
}

func (o *HollowOptions) complete() error {
	var errs []error
	switch o.Kind {
	case HollowMinikubelet:
		if o.FakeCRI == "" {
			errs = append(errs, errors.New("cluster: HollowOptions.FakeCRI is required for minikubelet hollow nodes"))
		}
	case HollowKubemark:
	default:
		errs = append(errs, fmt.Errorf("cluster: HollowOptions.Kind %q: want %q or %q", o.Kind, HollowMinikubelet, HollowKubemark))
	}
	if o.Binary == "" {
		errs = append(errs, errors.New("cluster: HollowOptions.Binary is required"))
	}
	if o.Count < 1 || o.Count > maxHollowNodes {
		errs = append(errs, fmt.Errorf("cluster: HollowOptions.Count %d: want 1 to %d", o.Count, maxHollowNodes))
	}
	if o.Prefix == "" {
		o.Prefix = "hollow-" + string(o.Kind)
	}
	if o.Parallel <= 0 {
		o.Parallel = hollowParallel
	}
	return errors.Join(errs...)
}

// HollowNode is one hollow node: its agent and, for minikubelet, its
// runtime process.
type HollowNode struct {
	// Name is the Node's name.
	Name           string
	dir            string
	agent, runtime *proc
}

// AgentPID is the agent's process ID (minikubelet's or kubemark's), 0
// once it exited.
func (n *HollowNode) AgentPID() int { return n.agent.pid() }

// RuntimePID is fakecri's process ID for a minikubelet node; 0 for a
// kubemark node, whose runtime runs in its own process.
func (n *HollowNode) RuntimePID() int { return n.runtime.pid() }

// AgentLog is the path of the agent's log.
func (n *HollowNode) AgentLog() string { return filepath.Join(n.dir, "agent.log") }

// Hollow is a set of hollow nodes StartHollow started. Stop is idempotent.
type Hollow struct {
	c     *Cluster
	opts  HollowOptions
	dir   string
	nodes []*HollowNode

	stopOnce sync.Once
	stopErr  error
}

// Nodes are the set's nodes, in name order.
func (h *Hollow) Nodes() []*HollowNode { return h.nodes }

// StartHollow starts opts.Count hollow nodes of one kind, each with a
// client certificate for system:node:<name> in system:nodes and its own
// kubelet port on the host IP, and returns without waiting for them
// (WaitReady does). Their directories live in the cluster's, so that the
// cluster's Cleanup removes them after a crash; Stop (or the cluster's
// Stop) stops them. On error, what was started is stopped again.
func (c *Cluster) StartHollow(ctx context.Context, opts HollowOptions) (_ *Hollow, err error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	c.hollowMu.Lock()
	seq := len(c.hollow)
	h := &Hollow{c: c, opts: opts, dir: filepath.Join(c.dir, fmt.Sprintf("hollow-%d", seq))}
	c.hollow = append(c.hollow, h)
	c.hollowMu.Unlock()
	defer func() {
		if err != nil {
			err = errors.Join(err, h.Stop(context.WithoutCancel(ctx)))
		}
	}()
	h.nodes = make([]*HollowNode, opts.Count)
	for i := range h.nodes {
		name := fmt.Sprintf("%s-%03d", opts.Prefix, i)
		h.nodes[i] = &HollowNode{Name: name, dir: filepath.Join(h.dir, name)}
	}
	work := make(chan int) // node indices; closed once all are handed out
	errs := make(chan error, opts.Count)
	var wg sync.WaitGroup
	for range opts.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				errs <- h.start(ctx, seq, i)
			}
		}()
	}
	for i := range h.nodes {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	var all []error
	for e := range errs {
		all = append(all, e)
	}
	if err := errors.Join(append(all, ctx.Err())...); err != nil {
		return nil, err
	}
	return h, nil
}

// start starts node i of set seq.
func (h *Hollow) start(ctx context.Context, seq, i int) error {
	n := h.nodes[i]
	for _, d := range []string{"root", "logs", "manifests", "pki"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return fmt.Errorf("hollow node %s: %w", n.Name, err)
		}
	}
	cert, key, err := h.c.ca.issue(filepath.Join(n.dir, "pki"), "node", certSpec{cn: "system:node:" + n.Name, orgs: []string{"system:nodes"}, client: true})
	if err != nil {
		return fmt.Errorf("hollow node %s: %w", n.Name, err)
	}
	kubeconfig := filepath.Join(n.dir, "kubeconfig")
	if err := h.c.writeKubeconfig(kubeconfig, cert, key); err != nil {
		return err
	}
	// Below the ephemeral range and never handed out twice, even to the
	// nodes starting in parallel.
	port, err := freeport.Pick()
	if err != nil {
		return err
	}
	log := n.AgentLog()
	if h.opts.Kind == HollowKubemark {
		tmp := filepath.Join(n.dir, "tmp")
		if err := os.Mkdir(tmp, 0o755); err != nil {
			return fmt.Errorf("hollow node %s: %w", n.Name, err)
		}
		args := append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", kubemarkNamespace, h.opts.Binary,
			tmp, h.c.dir,
			"--morph=kubelet", "--name=" + n.Name, "--kubeconfig=" + kubeconfig,
			"--kubelet-port=" + strconv.Itoa(port), "--kubelet-read-only-port=0",
			// The fake image service: no containerd on the host to ask.
			"--use-host-image-service=false", "--v=1",
		}, h.opts.Args...)
		n.agent, err = launch(n.Name, "unshare", log, nil, args...)
		return err
	}
	sock := filepath.Join(n.dir, "cri.sock")
	n.runtime, err = launch(n.Name+" fakecri", h.opts.FakeCRI, filepath.Join(n.dir, "fakecri.log"), nil,
		"-listen", sock, "-pod-cidr", fmt.Sprintf("10.%d.%d.0/24", 200+seq%50, i), "-state-dir", n.dir)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, hollowSocketWait)
	defer cancel()
	err = poll(wctx, "wait for "+n.Name+"'s fakecri socket", 50*time.Millisecond, func(context.Context) error {
		_, err := os.Stat(sock)
		return err
	}, n.runtime)
	if err != nil {
		return err
	}
	args := append([]string{
		"--kubeconfig", kubeconfig,
		"--hostname-override", n.Name,
		"--node-ip", h.c.hostIP.String(),
		"--container-runtime-endpoint", "unix://" + sock,
		"--root-dir", filepath.Join(n.dir, "root"),
		"--pod-logs-dir", filepath.Join(n.dir, "logs"),
		"--pod-manifest-path", filepath.Join(n.dir, "manifests"),
		"--address", h.c.hostIP.String(),
		"--port", strconv.Itoa(port),
		"--read-only-port", "0",
		"--healthz-port", "0",
		"--socket", filepath.Join(n.dir, "minikubelet.sock"),
		// Pods' DNS as a real node's (node.go): without it each pod of
		// dnsPolicy ClusterFirst gets a MissingClusterDNS warning event,
		// one write to the apiserver a pod that no node of a cluster with
		// DNS makes (5.1 events a pod in make scale, 4 on a real node).
		"--cluster-dns", DNSServiceIP,
		"--cluster-domain", DNSDomain,
		// What makes it hollow: no pod or QoS cgroup (pods' cgroup parent
		// is the root, which exists), so no node allocatable limits on
		// them (the kubelet refuses that pair too), no block I/O throttle
		// rule.
		"--cgroups-per-qos=false",
		"--enforce-node-allocatable=none",
		"--cgroup-v1-blkio-accounting=false",
		"-v", "1",
	}, h.opts.Args...)
	n.agent, err = launch(n.Name, h.opts.Binary, log, nil, args...)
	return err
}

// WaitReady waits until every node of the set is registered and Ready, or
// ctx ends, or an agent or runtime exits.
func (h *Hollow) WaitReady(ctx context.Context) error {
	client, err := h.c.Client()
	if err != nil {
		return err
	}
	var watch []*proc
	for _, n := range h.nodes {
		watch = append(watch, n.agent)
		if n.runtime != nil {
			watch = append(watch, n.runtime)
		}
	}
	want := map[string]bool{}
	for _, n := range h.nodes {
		want[n.Name] = true
	}
	return poll(ctx, fmt.Sprintf("wait for %d %s hollow nodes to be Ready", len(h.nodes), h.opts.Kind), hollowReadyPoll, func(ctx context.Context) error {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range nodes.Items {
			if want[n.Name] && nodeReady(&n) {
				ready++
			}
		}
		if ready < len(want) {
			return fmt.Errorf("%d of %d Ready: %w", ready, len(want), errNotYet)
		}
		return nil
	}, watch...)
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// Stop stops the set's agents (SIGTERM, SIGKILL after 10s), then their
// runtimes, deletes their Node objects, unmounts whatever is mounted
// under the set's directory and removes it. Pods bound to the nodes stay
// in the API. It runs to the end even when ctx is done; later calls
// return the first call's result.
func (h *Hollow) Stop(context.Context) error {
	h.stopOnce.Do(func() { h.stopErr = h.stop() })
	return h.stopErr
}

func (h *Hollow) stop() error {
	stopAll := func(pick func(*HollowNode) *proc) {
		var wg sync.WaitGroup
		for _, n := range h.nodes {
			if n == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				pick(n).stop()
			}()
		}
		wg.Wait()
	}
	stopAll(func(n *HollowNode) *proc { return n.agent })
	stopAll(func(n *HollowNode) *proc { return n.runtime })
	var errs []error
	if dir := h.c.opts.LogDir; dir != "" && len(h.nodes) > 0 && h.nodes[0] != nil {
		// The first node's logs stand for the set's.
		n := h.nodes[0]
		for _, l := range []string{"agent.log", "fakecri.log"} {
			if _, err := os.Stat(filepath.Join(n.dir, l)); err == nil {
				errs = append(errs, copyFile(filepath.Join(n.dir, l), filepath.Join(dir, n.Name+"-"+l)))
			}
		}
	}
	cctx, cancel := cleanupContext()
	defer cancel()
	if client, err := h.c.Client(); err != nil {
		errs = append(errs, err)
	} else {
		for _, n := range h.nodes {
			if n == nil {
				continue
			}
			err := client.CoreV1().Nodes().Delete(cctx, n.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete Node %s: %w", n.Name, err))
			}
		}
	}
	if _, err := os.Stat(h.dir); err == nil {
		errs = append(errs, ctrdtest.UnmountAll(h.dir), os.RemoveAll(h.dir))
	}
	return errors.Join(errs...)
}
