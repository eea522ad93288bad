package stats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/cgroups"
)

// benchHierarchies are the v1 hierarchies a container's cgroup is made in
// for the benchmarks, as runc makes it in those the stats read.
var benchHierarchies = []string{"cpu", "cpuacct", "memory", "pids", "blkio"}

// realPods makes n BestEffort pod cgroups on the host's real v1
// hierarchies, below a root of the benchmark's own, each as a pod of the
// agent has them: a sandbox cgroup whose sleeping process has a network
// namespace of its own (as a pause process), and one container cgroup
// with a sleeping process. It returns the manager and the pods as
// StatsPods lists them, and skips on other hosts; the processes and
// cgroups are gone when b ends.
func realPods(b *testing.B, n int) (*cgroups.Manager, listedStatsPods) {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("needs root to create cgroups")
	}
	if _, err := os.Stat(filepath.Join(cgroups.DefaultMountRoot, "memory", "cgroup.procs")); err != nil {
		b.Skip("needs a cgroup v1 memory hierarchy")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		b.Skip("needs unshare(1) for the sandboxes' network namespaces")
	}
	rb := make([]byte, 4)
	_, _ = rand.Read(rb)
	root := "/minikubelet-bench-" + hex.EncodeToString(rb)
	ctx := context.Background()
	m, err := cgroups.New(ctx, cgroups.Config{Root: root, Driver: cgroups.DriverCgroupfs, PerQOS: true})
	if err != nil {
		b.Fatal(err)
	}
	var procs []*exec.Cmd
	var dirs []string // sandbox and container cgroups, to remove before their pods'
	var uids []types.UID
	b.Cleanup(func() {
		for _, c := range procs {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		for _, d := range dirs {
			for _, h := range benchHierarchies {
				_ = os.Remove(filepath.Join(cgroups.DefaultMountRoot, h, d))
			}
		}
		for _, uid := range uids {
			if err := m.RemovePod(ctx, uid); err != nil {
				b.Errorf("cleanup: %v", err)
			}
		}
		for _, h := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "blkio", "devices", "freezer", "systemd"} {
			for _, q := range []string{"kubepods/burstable", "kubepods/besteffort", "kubepods", ""} {
				_ = os.Remove(filepath.Join(cgroups.DefaultMountRoot, h, root, q))
			}
		}
	})
	// start runs argv in the cgroup cg of every benchHierarchies.
	start := func(cg string, argv ...string) {
		for _, h := range benchHierarchies {
			if err := os.MkdirAll(filepath.Join(cgroups.DefaultMountRoot, h, cg), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		dirs = append(dirs, cg)
		cmd := exec.Command(argv[0], argv[1:]...)
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		procs = append(procs, cmd)
		for _, h := range benchHierarchies {
			f := filepath.Join(cgroups.DefaultMountRoot, h, cg, "cgroup.procs")
			if err := os.WriteFile(f, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	var pods listedStatsPods
	for i := 0; i < n; i++ {
		// Random IDs, as the runtime's and the apiserver's: the labels
		// they are in are most of what the compressor sees.
		uid := types.UID(fmt.Sprintf("%s-%s-%s-%s-%s", randomHex(4), randomHex(2), randomHex(2), randomHex(2), randomHex(6)))
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("stats-%d", i), Namespace: "default", UID: uid},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main"}}}}
		if err := m.EnsurePod(ctx, pod); err != nil {
			b.Fatal(err)
		}
		uids = append(uids, uid)
		parent := m.PodCgroupParent(pod)
		sandbox := m.ContainerCgroup(parent, randomHex(32))
		start(sandbox, unshare, "--net", "sleep", "3600")
		id := randomHex(32)
		ctr := m.ContainerCgroup(parent, id)
		start(ctr, "sleep", "3600")
		pods = append(pods, Pod{Name: pod.Name, Namespace: pod.Namespace, UID: uid, StartTime: time.Unix(1700000000, 0), Cgroup: parent, SandboxCgroup: sandbox,
			Containers: []Container{{Name: "main", ID: id, Image: "registry.k8s.io/e2e-test-images/busybox:1.37.0-1", StartTime: time.Unix(1700000001, 0), Cgroup: ctr}}})
	}
	return m, pods
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// listedStatsPods is a podSource of fixed pods.
type listedStatsPods []Pod

func (l listedStatsPods) StatsPods() []Pod { return l }

// discardResponse is an http.ResponseWriter that drops the body, as a
// scraper's socket would take it.
type discardResponse struct {
	h http.Header
	n int
}

func (d *discardResponse) Header() http.Header { return d.h }

func (d *discardResponse) Write(b []byte) (int, error) {
	d.n += len(b)
	return len(b), nil
}

func (d *discardResponse) WriteHeader(int) {}

// benchFresh times fresh reads of the handler h makes of a Provider of
// 100 real pods (realPods) reading through open files, as the agent
// makes them, gzipped as scrapers ask for them: each iteration is past
// the snapshot's age, so every cgroup and network is read again. It
// reports the process's CPU time a read besides the wall time.
func benchFresh(b *testing.B, h func(p *Provider) http.Handler) {
	m, pods := realPods(b, 100)
	files := m.NewStatsFiles()
	defer files.Close()
	clk := clocktesting.NewFakeClock(time.Unix(1700001000, 0))
	root := b.TempDir()
	p := New(Config{
		NodeName: "node-a", Pods: pods, Cgroups: m, Files: files, Clock: clk,
		PodsCgroup: m.PodsCgroup(), MachineCores: 2, MachineMemory: 4 << 30,
		Fs: FsConfig{RootDir: root, Runtime: fakeFsRuntime{dir: root}, Images: fakeFsRuntime{dir: root}},
	})
	handler := h(p)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	w := &discardResponse{h: http.Header{}}
	plain := &discardResponse{h: http.Header{}}
	handler.ServeHTTP(plain, httptest.NewRequest(http.MethodGet, "/", nil)) // the first read opens the files
	b.ReportAllocs()
	before := processCPU(b)
	for b.Loop() {
		clk.Step(1100 * time.Millisecond)
		clear(w.h)
		handler.ServeHTTP(w, req)
	}
	b.ReportMetric(float64(processCPU(b)-before)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(plain.n)/1024, "body-KiB")
}

// BenchmarkCadvisorFresh is a fresh /metrics/cadvisor read at 100 pods.
func BenchmarkCadvisorFresh(b *testing.B) {
	benchFresh(b, func(p *Provider) http.Handler { return p.CadvisorHandler() })
}

// BenchmarkSummaryFresh is a fresh /stats/summary read at 100 pods.
func BenchmarkSummaryFresh(b *testing.B) {
	benchFresh(b, func(p *Provider) http.Handler { return p.SummaryHandler() })
}

// BenchmarkResourceFresh is a fresh /metrics/resource read at 100 pods.
func BenchmarkResourceFresh(b *testing.B) {
	benchFresh(b, func(p *Provider) http.Handler { return p.ResourceHandler() })
}

// processCPU is the CPU time of the process, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
