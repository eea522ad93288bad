package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// envFakeCRI names fakecri's binary; without it the test builds one.
const envFakeCRI = "MINIKUBELET_FAKECRI"

// The small form of make scale (issue 21 item 6), on a control plane
// alone: three hollow minikubelet nodes (the agent's real binary and
// apiserver code paths against fakecri) register and turn Ready, run 30
// pods to Running in the API, each with an address of its node's fakecri
// pool, and delete them (the agents' final deletes); stopping the nodes
// leaves no process, Node or directory behind. With
// MINIKUBELET_CLUSTER_AGENT=kubelet the nodes are kubemark's hollow
// kubelets instead, to check the test.
func TestClusterHollowNodes(t *testing.T) {
	c := startForTest(t, func(o *Options) { o.Agent = NoAgent })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts := HollowOptions{Kind: HollowMinikubelet, Count: 3, Prefix: "hollow-ci", Binary: os.Getenv("MINIKUBELET_BIN"), FakeCRI: fakeCRI(t)}
	if Agent(os.Getenv(envTestAgent)) == Kubelet {
		opts = HollowOptions{Kind: HollowKubemark, Count: 3, Prefix: "hollow-ci", Binary: c.opts.Bins.Kubemark()}
	}
	h, err := c.StartHollow(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s's log:\n%s", h.Nodes()[0].Name, tailFile(h.Nodes()[0].AgentLog(), 40))
		}
	})
	if err := h.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	client, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	const pods = 30
	names := make([]string, pods)
	for i := range names {
		names[i] = fmt.Sprintf("hollow-%02d", i)
	}
	forEach(t, names, func(name string) error {
		_, err := client.CoreV1().Pods("default").Create(ctx, hollowPod(name), metav1.CreateOptions{})
		return err
	})
	err = poll(ctx, "wait for the pods to run", 500*time.Millisecond, func(ctx context.Context) error {
		return allRunning(ctx, client, opts.Kind, pods)
	})
	if err != nil {
		t.Fatal(err)
	}
	forEach(t, names, func(name string) error {
		return client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{})
	})
	err = poll(ctx, "wait for the pods to be gone", 500*time.Millisecond, func(ctx context.Context) error {
		list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=hollow"})
		if err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d pods left: %w", len(list.Items), errNotYet)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	var pids []int
	for _, n := range h.Nodes() {
		pids = append(pids, n.AgentPID(), n.RuntimePID())
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if pid != 0 {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
				t.Errorf("process %d still runs after Stop", pid)
			}
		}
	}
	if _, err := os.Stat(h.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hollow dir %s after Stop: %v", h.dir, err)
	}
	for _, n := range h.Nodes() {
		if _, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Node %s after Stop: %v", n.Name, err)
		}
	}
}

// hollowPod is a pod a hollow node runs: one container of an image its
// fake runtime "pulls", no volume.
func hollowPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "hollow"}},
		Spec: v1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

// allRunning checks that want pods are Running, spread over more than one
// node, each minikubelet node's pods with distinct addresses of its
// fakecri's pool (10.200.0.0/16 for the first set).
func allRunning(ctx context.Context, client kubernetes.Interface, kind HollowKind, want int) error {
	list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=hollow"})
	if err != nil {
		return err
	}
	running, nodes, ips := 0, map[string]bool{}, map[string]bool{}
	for _, p := range list.Items {
		if p.Status.Phase != v1.PodRunning {
			continue
		}
		running++
		nodes[p.Spec.NodeName] = true
		if kind != HollowMinikubelet {
			continue
		}
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !netip.MustParsePrefix("10.200.0.0/16").Contains(ip) || ips[p.Spec.NodeName+p.Status.PodIP] {
			return fmt.Errorf("pod %s on %s has IP %q: want one of its own from the node's fakecri pool", p.Name, p.Spec.NodeName, p.Status.PodIP)
		}
		ips[p.Spec.NodeName+p.Status.PodIP] = true
	}
	if running < want {
		return fmt.Errorf("%d of %d Running: %w", running, want, errNotYet)
	}
	if len(nodes) < 2 {
		return fmt.Errorf("all pods on %v, want them spread", nodes)
	}
	return nil
}

// forEach calls f for every name, ten at a time, and fails t on the first
// error.
func forEach(t *testing.T, names []string, f func(string) error) {
	t.Helper()
	work := make(chan string) // closed once every name is handed out
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				errs <- f(n)
			}
		}()
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// fakeCRI is $MINIKUBELET_FAKECRI, or a build of test/scale/cmd/fakecri.
func fakeCRI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(envFakeCRI); p != "" {
		return p
	}
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	out := filepath.Join(t.TempDir(), "fakecri")
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
	}
	cmd := exec.Command(goBin, "build", "-o", out, "./test/scale/cmd/fakecri")
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build fakecri: %v\n%s", err, strings.TrimSpace(string(b)))
	}
	return out
}
