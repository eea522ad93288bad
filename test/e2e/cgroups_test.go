package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

const cgroupMount = "/sys/fs/cgroup"

// cgroupFile reads a file of the cgroup at path on one v1 hierarchy.
func cgroupFile(t *testing.T, hierarchy, path, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cgroupMount, hierarchy, path, file))
	if err != nil {
		t.Fatalf("read %s of cgroup %s: %v", file, path, err)
	}
	return strings.TrimSpace(string(b))
}

// cgroupHierarchies lists the mounted hierarchies (links to a co-mounted
// one, such as cpu -> cpu,cpuacct, are left out).
func cgroupHierarchies(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(cgroupMount)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
			out = append(out, filepath.Join(cgroupMount, e.Name()))
		}
	}
	return out
}

// skipUnlessCgroupV1 skips tests that read v1 files on a v2-only host.
func skipUnlessCgroupV1(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(cgroupMount, "memory", "cgroup.procs")); err != nil {
		t.Skip("these checks read cgroup v1 files; the host has no v1 memory hierarchy")
	}
}

// runtimeSpecOf reads the OCI runtime spec's cgroups path and the process
// ID of a container from the runtime's verbose status.
func runtimeSpecOf(ctx context.Context, t *testing.T, rt *ctrdtest.Containerd, id string) (cgroupsPath string, pid int) {
	t.Helper()
	resp, err := rt.Runtime().ContainerStatus(ctx, id, true)
	if err != nil {
		t.Fatalf("verbose status of %s: %v", id, err)
	}
	var info struct {
		Pid         int `json:"pid"`
		RuntimeSpec struct {
			Linux struct {
				CgroupsPath string `json:"cgroupsPath"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil {
		t.Fatalf("verbose status of %s: %v", id, err)
	}
	return info.RuntimeSpec.Linux.CgroupsPath, info.Pid
}

func containerIDOf(t testing.TB, pod *v1.Pod, name string) string {
	t.Helper()
	cs := containerStatus(pod, name)
	if cs == nil {
		t.Fatalf("no status of container %s", name)
	}
	return strings.TrimPrefix(cs.ContainerID, "containerd://")
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A Guaranteed and a BestEffort pod land in the kubelet's QoS cgroups with
// the kubelet's limits; their containers sit in the pod's cgroup, as the
// runtime spec says, with the OOM score adjustment of their class; and
// once the pods are deleted no cgroup of theirs is left on any hierarchy.
func TestCgroupQoS(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		skipUnlessCgroupV1(t)
		a := startAgent(t, rt)
		a.writeManifest("gold.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: gold
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sleep", "3600"]
    resources:
      limits: {cpu: 200m, memory: 64Mi}
`, env.busybox))
		a.writeManifest("bronze.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: bronze
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sleep", "3600"]
`, env.busybox))
		gold := a.waitRunning("gold", 60*time.Second)
		bronze := a.waitRunning("bronze", 60*time.Second)
		if gold.Status.QOSClass != v1.PodQOSGuaranteed || bronze.Status.QOSClass != v1.PodQOSBestEffort {
			t.Errorf("QoS classes = %s, %s; want Guaranteed, BestEffort", gold.Status.QOSClass, bronze.Status.QOSClass)
		}
		root := a.cgroupRoot()
		goldCg := root + "/kubepods/pod" + string(gold.UID)
		bronzeCg := root + "/kubepods/besteffort/pod" + string(bronze.UID)

		for _, c := range []struct{ hierarchy, path, file, want string }{
			{"cpu", goldCg, "cpu.cfs_quota_us", "20000"},
			{"cpu", goldCg, "cpu.cfs_period_us", "100000"},
			{"cpu", goldCg, "cpu.shares", "204"},
			{"memory", goldCg, "memory.limit_in_bytes", "67108864"},
			{"cpu", bronzeCg, "cpu.shares", "2"},
			{"cpu", bronzeCg, "cpu.cfs_quota_us", "-1"},
			{"cpu", root + "/kubepods/besteffort", "cpu.shares", "2"},
		} {
			if got := cgroupFile(t, c.hierarchy, c.path, c.file); got != c.want {
				t.Errorf("%s of %s = %s, want %s", c.file, c.path, got, c.want)
			}
		}
		if limit := readInt(t, filepath.Join(cgroupMount, "memory", bronzeCg, "memory.limit_in_bytes")); limit < 1<<62 {
			t.Errorf("BestEffort pod's memory limit = %d, want none", limit)
		}

		// The runtime put each container in its pod's cgroup, at
		// <pod cgroup>/<container id>, and gave it its class's OOM score.
		ctx := context.Background()
		ctrdAdj := readInt(t, fmt.Sprintf("/proc/%d/oom_score_adj", rt.PID()))
		for _, c := range []struct {
			pod     *v1.Pod
			cgroup  string
			wantAdj int64
		}{
			// containerd's restrict_oom_score_adj raises -997 to its own.
			{gold, goldCg, max(-997, ctrdAdj)},
			{bronze, bronzeCg, 1000},
		} {
			id := containerIDOf(t, c.pod, "app")
			path, pid := runtimeSpecOf(ctx, t, rt, id)
			if want := c.cgroup + "/" + id; path != want {
				t.Errorf("%s: runtime spec cgroupsPath = %q, want %q", c.pod.Name, path, want)
			}
			procCgroup, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(procCgroup), ":memory:"+c.cgroup+"/"+id+"\n") {
				t.Errorf("%s: the container's process is in\n%s\nwant memory:%s/%s", c.pod.Name, procCgroup, c.cgroup, id)
			}
			if adj := readInt(t, fmt.Sprintf("/proc/%d/oom_score_adj", pid)); adj != c.wantAdj {
				t.Errorf("%s: oom_score_adj = %d, want %d", c.pod.Name, adj, c.wantAdj)
			}
		}

		// Deleted pods leave no cgroup behind, on any hierarchy.
		a.removeManifest("gold.yaml")
		a.removeManifest("bronze.yaml")
		polltest.Until(t, 60*time.Second, "pod cgroups removed", func() (bool, string) {
			var left []string
			for _, h := range cgroupHierarchies(t) {
				for _, p := range []string{goldCg, bronzeCg} {
					if _, err := os.Stat(filepath.Join(h, p)); err == nil {
						left = append(left, filepath.Join(h, p))
					}
				}
			}
			return len(left) == 0, strings.Join(left, ", ")
		})
		if _, err := os.Stat(filepath.Join(cgroupMount, "cpu", root, "kubepods", "besteffort")); err != nil {
			t.Errorf("the QoS cgroups went with the pods: %v", err)
		}
	})
}

// A container that allocates past its memory limit is OOM-killed, and the
// pod's status says so as the runtime reports it: terminated, reason
// OOMKilled, exit code 137.
func TestCgroupOOMKilled(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("hog.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: hog
spec:
  restartPolicy: Never
  containers:
  - name: hog
    image: %s
    # A string that doubles until the memory limit stops it.
    command: ["awk", "BEGIN { s = \"x\"; while (1) s = s s }"]
    resources:
      limits: {memory: 32Mi}
`, env.busybox))
		var term *v1.ContainerStateTerminated
		polltest.Until(t, 60*time.Second, "hog terminated", func() (bool, string) {
			pod := a.pod("hog")
			if pod == nil {
				return false, "not on /pods"
			}
			if cs := containerStatus(pod, "hog"); cs != nil && cs.State.Terminated != nil {
				term = cs.State.Terminated
				return true, ""
			}
			return false, describe(pod)
		})
		if term.Reason != "OOMKilled" || term.ExitCode != 137 {
			t.Errorf("hog terminated with reason %q, exit code %d; want OOMKilled, 137", term.Reason, term.ExitCode)
		}
	})
}

// /stats/summary and /metrics/cadvisor report a running pod: its cpu,
// memory and network, the bytes its container wrote with O_DIRECT, in
// block I/O stats within one stats period, its cpu limit as cAdvisor's
// spec series and the file it wrote in its writable layer's usage.
func TestCgroupStats(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("writer.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: writer
spec:
  containers:
  - name: writer
    image: %s
    command: ["sh", "-c"]
    args:
    - |
      dd if=/dev/zero of=/tmp/data bs=1M count=16 oflag=direct 2>&1
      ping -c 3 -W 1 "$(ip route | awk '/default/ { print $3 }')"
      echo done
      exec sleep 3600
    resources:
      limits: {cpu: 500m}
`, env.busybox))
		pod := a.waitRunning("writer", 60*time.Second)
		polltest.Until(t, 30*time.Second, "writer done", func() (bool, string) {
			b, _ := os.ReadFile(a.containerLog(pod, "writer", 0))
			return strings.Contains(string(b), "done\n"), string(b)
		})

		// Block I/O: the container's 16 MiB of direct writes are in its
		// series and in its pod's, on the next scrape (a snapshot is at
		// most one second old).
		const wrote = 16 << 20
		id := containerIDOf(t, pod, "writer")
		polltest.Until(t, 5*time.Second, "block I/O on /metrics/cadvisor", func() (bool, string) {
			body, code, err := a.get(a.port, "/metrics/cadvisor")
			if err != nil || code != 200 {
				return false, fmt.Sprintf("HTTP %d %v", code, err)
			}
			ctr := sum(body, "container_fs_writes_bytes_total", `container="writer"`, `name="`+id+`"`, `pod="`+pod.Name+`"`, `namespace="default"`)
			podRow := sum(body, "container_fs_writes_bytes_total", `container=""`, `pod="`+pod.Name+`"`)
			ops := sum(body, "container_fs_writes_total", `container="writer"`, `pod="`+pod.Name+`"`)
			return ctr >= wrote && podRow >= wrote && ops >= 16, fmt.Sprintf("container %v bytes in %v writes, pod %v bytes:\n%s", ctr, ops, podRow, grepFSLines(body, pod.Name))
		})
		body, _, err := a.get(a.port, "/metrics/cadvisor")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("writer: %.0f bytes in %.0f writes; pod: %.0f bytes; pod eth0: %.0f bytes received, %.0f sent",
			sum(body, "container_fs_writes_bytes_total", `container="writer"`, `pod="`+pod.Name+`"`),
			sum(body, "container_fs_writes_total", `container="writer"`, `pod="`+pod.Name+`"`),
			sum(body, "container_fs_writes_bytes_total", `container=""`, `pod="`+pod.Name+`"`),
			sum(body, "container_network_receive_bytes_total", `pod="`+pod.Name+`"`),
			sum(body, "container_network_transmit_bytes_total", `pod="`+pod.Name+`"`))
		// The cpu spec the limit set (500m: a 50 ms quota per 100 ms,
		// 512 shares), and the 16 MiB file in the writable layer, once
		// the runtime has measured it (containerd: every 10 s) and the
		// agent asked again (FsMaxAge, 10 s).
		for _, m := range []struct {
			name string
			want float64
		}{
			{"container_spec_cpu_quota", 50000}, {"container_spec_cpu_period", 100000}, {"container_spec_cpu_shares", 512},
		} {
			if v := sum(body, m.name, `container="writer"`, `pod="`+pod.Name+`"`); v != m.want {
				t.Errorf("%s of writer = %v, want %v", m.name, v, m.want)
			}
		}
		polltest.Until(t, 45*time.Second, "the writable layer on /metrics/cadvisor", func() (bool, string) {
			body, code, err := a.get(a.port, "/metrics/cadvisor")
			if err != nil || code != 200 {
				return false, fmt.Sprintf("HTTP %d %v", code, err)
			}
			used := sum(body, "container_fs_usage_bytes", `container="writer"`, `name="`+id+`"`)
			limit := sum(body, "container_fs_limit_bytes", `container="writer"`, `name="`+id+`"`)
			return used >= wrote && limit > used, fmt.Sprintf("used %v of %v:\n%s", used, limit, grepFSLines(body, pod.Name))
		})
		for _, m := range []struct {
			name   string
			labels []string
		}{
			{"container_cpu_usage_seconds_total", []string{`container="writer"`, `cpu="total"`}},
			{"container_memory_working_set_bytes", []string{`container="writer"`}},
			{"container_memory_rss", []string{`container="writer"`}},
			{"container_memory_usage_bytes", []string{`container=""`}},
			{"container_network_receive_bytes_total", []string{`container=""`, `interface="eth0"`}},
			{"container_network_transmit_bytes_total", []string{`container=""`, `interface="eth0"`}},
		} {
			if v := sum(body, m.name, append(m.labels, `pod="`+pod.Name+`"`)...); v <= 0 {
				t.Errorf("%s%v = %v, want > 0", m.name, m.labels, v)
			}
		}

		// The Summary API; a CPU rate appears once two reads are a second
		// apart or more.
		summary := func() *podSummary {
			t.Helper()
			body, code, err := a.get(a.port, "/stats/summary")
			if err != nil || code != 200 {
				t.Fatalf("/stats/summary: HTTP %d %v %s", code, err, body)
			}
			var s summaryShape
			if err := json.Unmarshal([]byte(body), &s); err != nil {
				t.Fatalf("/stats/summary: %v", err)
			}
			if s.Node.NodeName != a.node {
				t.Errorf("nodeName = %q, want %q", s.Node.NodeName, a.node)
			}
			for i := range s.Pods {
				if s.Pods[i].PodRef.UID == string(pod.UID) {
					return &s.Pods[i]
				}
			}
			t.Fatalf("pod %s not in /stats/summary: %s", pod.Name, body)
			return nil
		}
		var ps *podSummary
		polltest.Until(t, 5*time.Second, "a CPU rate on /stats/summary", func() (bool, string) {
			ps = summary()
			return ps.CPU != nil && ps.CPU.UsageNanoCores != nil, fmt.Sprintf("cpu %+v", ps.CPU)
		})
		if ps.CPU == nil || ps.CPU.UsageCoreNanoSeconds == nil || *ps.CPU.UsageCoreNanoSeconds == 0 || ps.CPU.UsageNanoCores == nil {
			t.Errorf("pod cpu = %+v, want a usage and a rate", ps.CPU)
		}
		if ps.Memory == nil || ps.Memory.WorkingSetBytes == nil || *ps.Memory.WorkingSetBytes == 0 {
			t.Errorf("pod memory = %+v, want a working set", ps.Memory)
		}
		if ps.Network == nil || ps.Network.Name != "eth0" || ps.Network.RxBytes == nil || *ps.Network.RxBytes == 0 || *ps.Network.TxBytes == 0 {
			t.Errorf("pod network = %+v, want eth0 with bytes both ways", ps.Network)
		}
		if len(ps.Containers) != 1 || ps.Containers[0].Name != "writer" || ps.Containers[0].Memory == nil || *ps.Containers[0].Memory.RSSBytes == 0 {
			t.Errorf("containers = %+v, want writer with its memory", ps.Containers)
		}
	})
}

// summaryShape is the part of the Summary API the test reads.
type summaryShape struct {
	Node struct {
		NodeName string `json:"nodeName"`
	} `json:"node"`
	Pods []podSummary `json:"pods"`
}

type podSummary struct {
	PodRef struct {
		UID string `json:"uid"`
	} `json:"podRef"`
	CPU *struct {
		UsageNanoCores       *uint64 `json:"usageNanoCores"`
		UsageCoreNanoSeconds *uint64 `json:"usageCoreNanoSeconds"`
	} `json:"cpu"`
	Memory  *memorySummary `json:"memory"`
	Network *struct {
		Name    string  `json:"name"`
		RxBytes *uint64 `json:"rxBytes"`
		TxBytes *uint64 `json:"txBytes"`
	} `json:"network"`
	Containers []struct {
		Name   string         `json:"name"`
		Memory *memorySummary `json:"memory"`
	} `json:"containers"`
}

type memorySummary struct {
	WorkingSetBytes *uint64 `json:"workingSetBytes"`
	RSSBytes        *uint64 `json:"rssBytes"`
}

// sum adds up the samples of metric whose labels include every one of
// labels, in a Prometheus text body.
func sum(body, metric string, labels ...string) float64 {
	var total float64
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, metric+"{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		match := true
		for _, l := range labels {
			if !strings.Contains(line[:i], l) {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			total += v
		}
	}
	return total
}

// grepFSLines returns the _fs_ metric lines of body that contain s.
func grepFSLines(body, s string) string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.Contains(line, s) && strings.Contains(line, "_fs_") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
