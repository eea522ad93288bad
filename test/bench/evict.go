package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// The eviction bench gives pods evictPodsMemory (--system-reserved takes
// the rest), so that allocatableMemory.available is what the bench's own
// pod leaves of it, whatever else runs on the machine; memory.available's
// threshold, which allocatableMemory.available copies, is evictThreshold,
// and the pod allocates evictHogMiB (it would meet the OOM killer at
// evictPodsMemory).
const (
	evictPodsMemory = 1 << 30
	evictThreshold  = 300 << 20
	evictHogMiB     = 1536
)

// memhogPod is a BestEffort static pod that waits 2s (so that the bench
// knows its processes before it starts), then allocates evictHogMiB in
// 1MiB strings as fast as it can and holds them.
func memhogPod(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: hog
    image: %s
    command: ["sh", "-c", "sleep 2; exec awk 'BEGIN { for (i = 0; i < %d; i++) a[i] = sprintf(\"%%1048576s\", \"\"); system(\"sleep 3600\") }'"]
`, name, image, evictHogMiB)
}

// evictBench times, for a BestEffort pod allocating memory fast, the time
// from the pods' allocatable memory (allocatableMemory.available: the
// pods cgroup's limit less its working set) falling below the hard
// threshold to the pod's processes being dead: n runs with the kernel's
// memory notifications on, nOff with them off (the monitoring period, 10s,
// alone). cgroup v1 only: it reads the pods cgroup's memory files.
func evictBench(ctx context.Context, bin string, rt *ctrdtest.Containerd, image, base string, n, nOff int, rep *report) error {
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.usage_in_bytes"); err != nil {
		fmt.Println("eviction: skipped: needs the cgroup v1 memory hierarchy")
		return nil
	}
	capacity, err := memTotal()
	if err != nil {
		return err
	}
	for _, mode := range []struct {
		name string
		runs int
		flag string
	}{{"notifications", n, "--kernel-memcg-notification=true"}, {"polling", nOff, "--kernel-memcg-notification=false"}} {
		if mode.runs == 0 {
			continue
		}
		a, err := startAgent(bin, rt, base, "evict-"+mode.name, mode.flag,
			"--system-reserved", fmt.Sprintf("memory=%d", capacity-evictPodsMemory),
			"--eviction-hard", fmt.Sprintf("memory.available<%d", evictThreshold),
			"--eviction-pressure-transition-period", "1s")
		if err != nil {
			return err
		}
		lat, oom, err := a.evictRuns(ctx, rt, image, mode.runs)
		a.stop()
		if err != nil {
			return fmt.Errorf("eviction (%s): %w", mode.name, err)
		}
		fmt.Printf("allocatableMemory.available crossed -> BestEffort pod's processes dead, %s: %d of %d runs evicted", mode.name, len(lat), mode.runs)
		if len(lat) > 0 {
			fmt.Printf(", median %.0f ms, max %.0f ms", ms(median(lat)), ms(pct(lat, 1)))
		}
		fmt.Printf("; the OOM killer first in %d\n", oom)
		rep.Eviction = append(rep.Eviction, eviction{Mode: mode.name, Killed: summarize(lat), OOMKilledFirst: oom})
	}
	return nil
}

// evictRuns times runs evictions, one pod at a time, and counts the pods
// the kernel's OOM killer killed before they were evicted.
func (a *agentProc) evictRuns(ctx context.Context, rt *ctrdtest.Containerd, image string, runs int) ([]time.Duration, int, error) {
	var out []time.Duration
	oom := 0
	for i := range runs {
		d, evicted, err := a.evictOnce(image, fmt.Sprintf("hog-%d", i))
		if err != nil {
			return nil, 0, fmt.Errorf("run %d: %w", i, err)
		}
		if evicted {
			out = append(out, d)
		} else {
			oom++
		}
		if err := a.drain(ctx, rt); err != nil {
			return nil, 0, err
		}
		// The next BestEffort pod is admitted once the pressure is gone:
		// the transition period (1s) after the next round of the eviction
		// manager (every 10s) that finds the threshold not met.
		time.Sleep(12 * time.Second)
	}
	return out, oom, nil
}

// evictOnce runs one memhog pod and times its eviction.
// It reports false when the pod was not evicted (the kernel's OOM killer
// killed it first).
func (a *agentProc) evictOnce(image, name string) (time.Duration, bool, error) {
	manifest := filepath.Join(a.manifest, name+".yaml")
	if err := os.WriteFile(manifest, []byte(memhogPod(name, image)), 0o644); err != nil {
		return 0, false, err
	}
	podName := name + "-" + a.node
	var pod *v1.Pod
	for deadline := time.Now().Add(60 * time.Second); pod == nil; time.Sleep(pollInterval) {
		pods, err := a.pods()
		if err == nil && running(pods, podName) {
			for i := range pods {
				if pods[i].Name == podName {
					pod = &pods[i]
				}
			}
		}
		if time.Now().After(deadline) {
			return 0, false, fmt.Errorf("%s not running within 60s", podName)
		}
	}
	cid := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	procsFile := filepath.Join("/sys/fs/cgroup/pids", a.cgroupRoot, "kubepods/besteffort/pod"+string(pod.UID), cid, "cgroup.procs")
	b, err := os.ReadFile(procsFile)
	if err != nil {
		return 0, false, fmt.Errorf("the container's processes: %w", err)
	}
	pids := strings.Fields(string(b))
	if len(pids) == 0 {
		return 0, false, errors.New("the container has no process")
	}
	// Watch the pods' available memory until it crosses the threshold.
	pods := filepath.Join("/sys/fs/cgroup/memory", a.cgroupRoot, "kubepods")
	var crossed atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if avail, err := cgroupAvailable(pods, evictPodsMemory); err == nil && avail < evictThreshold {
				crossed.Store(time.Now().UnixNano())
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var took time.Duration
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Millisecond) {
		if allDead(pids) {
			at := time.Now()
			c := crossed.Load()
			if c == 0 {
				return 0, false, errors.New("the pod died before the threshold was seen crossed")
			}
			took = at.Sub(time.Unix(0, c))
			break
		}
		if time.Now().After(deadline) {
			return 0, false, fmt.Errorf("%s not killed within 60s", podName)
		}
	}
	// Killed by the eviction, or by the kernel's OOM killer first.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		pods, _ := a.pods()
		for i := range pods {
			if pods[i].Name == podName && pods[i].Status.Reason == "Evicted" {
				return took, true, nil
			}
		}
		if time.Now().After(deadline) {
			return took, false, nil
		}
	}
}

// allDead reports whether every process of pids is gone or a zombie.
func allDead(pids []string) bool {
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ...; comm may hold spaces.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] != 'Z' {
			return false
		}
	}
	return true
}

// cgroupAvailable is what the kubelet's signals compute on cgroup v1:
// capacity less the working set (usage less inactive file pages) of the
// memory cgroup at dir.
func cgroupAvailable(dir string, capacity int64) (int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		return 0, err
	}
	usage, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, err
	}
	stat, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	var inactive int64
	for _, line := range strings.Split(string(stat), "\n") {
		if v, ok := strings.CutPrefix(line, "total_inactive_file "); ok {
			inactive, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return capacity - (usage - inactive), nil
}

// memTotal is MemTotal of /proc/meminfo, in bytes: the node's memory
// capacity, as the agent reads it.
func memTotal() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}
