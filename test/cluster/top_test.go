package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Bounds of the kubectl top test.
const (
	// topBusyCPU is the busy pod's CPU limit: it spins within it.
	topBusyCPU = "100m"
	// topBallast is what the busy pod writes to its /dev/shm (a tmpfs,
	// charged to its memory cgroup), so that its working set is known to
	// be at least that.
	topBallast = 32 << 20
	// topWait bounds the wait for metrics-server's first figures of the
	// pod: two scrapes after it runs.
	topWait = 2 * time.Minute
)

// withMetricsServer asks startForTest for metrics-server.
func withMetricsServer(o *Options) { o.MetricsServer = true }

// kubectlBusy spins within its CPU limit and holds topBallast bytes of
// tmpfs.
func kubectlBusy() *v1.Pod {
	limits := v1.ResourceList{v1.ResourceCPU: resource.MustParse(topBusyCPU), v1.ResourceMemory: resource.MustParse("128Mi")}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kubectl-busy", Namespace: "default"},
		Spec: v1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []v1.Container{{
				Name: "busy", Image: busyboxImage,
				Command:   []string{"sh", "-c", fmt.Sprintf("head -c %d /dev/zero >/dev/shm/ballast && while :; do :; done", topBallast)},
				Resources: v1.ResourceRequirements{Limits: limits, Requests: limits},
			}},
		},
	}
}

// testTop checks kubectl top pod and node through metrics-server, which
// scrapes the node's /metrics/resource: the busy pod uses CPU (more than
// none, not much more than its limit) and its memory is its cgroup's
// working set (read here from the cgroup itself), ballast included; the
// node's figures are there, with percentages of its allocatable.
func testTop(ctx context.Context, t *testing.T, c *Cluster, client kubernetes.Interface, k kubectl, pod string) {
	defer func() {
		if t.Failed() {
			t.Logf("metrics-server log:\n%s", tailFile(c.logPath(metricsServerName), 30))
		}
	}()
	p, err := client.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var row []string
	wctx, cancel := context.WithTimeout(ctx, topWait)
	defer cancel()
	// POD NAME CPU(cores) MEMORY(bytes), once metrics-server has a rate.
	err = poll(wctx, "wait for kubectl top pod", 2*time.Second, func(ctx context.Context) error {
		out, err := k.run(ctx, "", "top", "pod", pod, "--containers", "--no-headers")
		if err != nil {
			return fmt.Errorf("%w: %w", err, errNotYet)
		}
		row = strings.Fields(out)
		if len(row) != 4 {
			return fmt.Errorf("kubectl top pod printed %q: %w", out, errNotYet)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl top pod: %v", row)
	ws, err := podWorkingSet(c.Containerd().CgroupParent(), p.UID)
	if err != nil {
		t.Fatal(err)
	}
	cpu, mem := quantity(t, row[2]), quantity(t, row[3])
	if row[0] != pod || row[1] != "busy" {
		t.Errorf("kubectl top pod --containers: pod %s container %s, want %s busy", row[0], row[1], pod)
	}
	// A CFS quota of 100m lets through 100m over each window of many
	// periods; half again allows for the scrape times' jitter.
	if limit := resource.MustParse(topBusyCPU); cpu.MilliValue() <= 0 || cpu.MilliValue() > limit.MilliValue()*3/2 {
		t.Errorf("kubectl top pod: CPU %s, want more than 0 and at most 1.5 x its limit %s", row[2], topBusyCPU)
	}
	// kubectl prints whole MiB, rounded down; the pod cgroup's figure
	// includes the pause process, which kubectl top leaves out.
	slack := int64(4<<20) + int64(ws)/10
	if m := mem.Value(); m+1<<20 <= topBallast || m > int64(ws)+slack || m < int64(ws)-slack {
		t.Errorf("kubectl top pod: memory %s (%d bytes), want at least the ballast %d and within %d of the pod cgroup's working set %d",
			row[3], m, topBallast, slack, ws)
	}

	// NAME CPU(cores) CPU% MEMORY(bytes) MEMORY%
	out := k.must(ctx, t, "", "top", "node", "--no-headers")
	node := strings.Fields(out)
	t.Logf("kubectl top node: %v", node)
	if len(node) != 5 || node[0] != c.NodeName() {
		t.Fatalf("kubectl top node printed %q, want one row for %s", out, c.NodeName())
	}
	n, err := client.CoreV1().Nodes().Get(ctx, c.NodeName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	capacity := n.Status.Capacity[v1.ResourceMemory]
	if ncpu := quantity(t, node[1]); ncpu.MilliValue() <= 0 {
		t.Errorf("kubectl top node: CPU %s, want more than 0", node[1])
	}
	if nmem := quantity(t, node[3]); nmem.Value() < mem.Value() || nmem.Value() > capacity.Value() {
		t.Errorf("kubectl top node: memory %s, want at least the busy pod's %s and at most the node's capacity %s", node[3], row[3], capacity.String())
	}
	for _, pct := range []string{node[2], node[4]} {
		if _, err := strconv.Atoi(strings.TrimSuffix(pct, "%")); err != nil || !strings.HasSuffix(pct, "%") {
			t.Errorf("kubectl top node: percentage %q is not one", pct)
		}
	}
}

// quantity parses a figure kubectl top printed.
func quantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatalf("kubectl top printed %q: %v", s, err)
	}
	return q
}

// podWorkingSet reads the working set of the pod's cgroup (pod<uid>, as
// the kubelet and minikubelet name it with the cgroupfs driver, somewhere
// below parent) as cAdvisor counts it: usage less inactive file pages.
func podWorkingSet(parent string, uid types.UID) (uint64, error) {
	root, usageFile, inactiveKey := "/sys/fs/cgroup/memory", "memory.usage_in_bytes", "total_inactive_file"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		root, usageFile, inactiveKey = "/sys/fs/cgroup", "memory.current", "inactive_file"
	}
	var dir string
	errFound := errors.New("found")
	err := filepath.WalkDir(filepath.Join(root, parent), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "pod"+string(uid) {
			dir = path
			return errFound
		}
		return nil
	})
	if dir == "" {
		return 0, fmt.Errorf("no cgroup pod%s below %s: %w", uid, filepath.Join(root, parent), err)
	}
	usage, err := readUint(filepath.Join(dir, usageFile))
	if err != nil {
		return 0, err
	}
	f, err := os.Open(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var inactive uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), inactiveKey+" "); ok {
			if inactive, err = strconv.ParseUint(v, 10, 64); err != nil {
				return 0, fmt.Errorf("%s: %w", filepath.Join(dir, "memory.stat"), err)
			}
		}
	}
	if inactive > usage {
		return 0, nil
	}
	return usage - inactive, nil
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
