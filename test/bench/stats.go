package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// statsResult is what statsCost measured for one endpoint.
type statsResult struct {
	path          string
	fresh, cached []time.Duration
	cpu           time.Duration // the agent's CPU time over the fresh calls
	bytes         int
}

// statsCost runs n pods with their own network, then times calls to
// /stats/summary, /metrics/cadvisor and /metrics/resource: calls fresh ones (each more than
// the provider's one-second snapshot age after the last, so that every
// cgroup and /proc/<pid>/net/dev is read again) and as many served from
// the snapshot, and the agent's CPU time over the fresh ones (threadsCPU:
// a fresh call takes about one clock tick of /proc/<pid>/stat). With
// profile, it then profiles fresh reads (statsProfiles).
func (a *agentProc) statsCost(image string, n, calls int, profile string) ([]statsResult, error) {
	for i := 0; i < n; i++ {
		m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: stats-%d\nspec:\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: main\n    image: %s\n    command: [\"sleep\", \"3600\"]\n", i, image)
		if err := os.WriteFile(filepath.Join(a.manifest, fmt.Sprintf("stats-%d.yaml", i)), []byte(m), 0o644); err != nil {
			return nil, err
		}
	}
	defer func() {
		for i := 0; i < n; i++ {
			_ = os.Remove(filepath.Join(a.manifest, fmt.Sprintf("stats-%d.yaml", i)))
		}
	}()
	// Every pod is on /stats/summary once its sandbox is ready and its
	// container runs.
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(time.Second) {
		body, _, err := a.get("/stats/summary")
		if err != nil {
			return nil, err
		}
		var s struct {
			Pods []struct {
				Containers []json.RawMessage `json:"containers"`
			} `json:"pods"`
		}
		if err := json.Unmarshal(body, &s); err != nil {
			return nil, fmt.Errorf("/stats/summary: %w", err)
		}
		up := 0
		for _, p := range s.Pods {
			if len(p.Containers) == 1 {
				up++
			}
		}
		if up >= n {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %d of %d pods on /stats/summary after 10 minutes", up, n)
		}
	}
	time.Sleep(5 * time.Second) // let the start-up work drain
	var out []statsResult
	for _, path := range []string{"/stats/summary", "/metrics/cadvisor", "/metrics/resource"} {
		r := statsResult{path: path}
		var cpu time.Duration
		for i := 0; i < calls; i++ {
			time.Sleep(1100 * time.Millisecond) // past the snapshot's age
			before, err := threadsCPU(a.cmd.Process.Pid)
			if err != nil {
				return nil, err
			}
			start := time.Now()
			body, code, err := a.get(path)
			took := time.Since(start)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			if code != http.StatusOK {
				return nil, fmt.Errorf("%s: HTTP %d", path, code)
			}
			after, err := threadsCPU(a.cmd.Process.Pid)
			if err != nil {
				return nil, err
			}
			cpu += after - before
			r.fresh, r.bytes = append(r.fresh, took), len(body)
			start = time.Now()
			if _, _, err := a.get(path); err != nil {
				return nil, err
			}
			r.cached = append(r.cached, time.Since(start))
		}
		r.cpu = cpu
		out = append(out, r)
	}
	if profile != "" {
		if err := a.statsProfiles(profile); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// statsProfiles writes three CPU profiles of the agent, each over 30s of
// fresh reads: prefix.summary-cadvisor.pprof while /stats/summary and
// /metrics/cadvisor are called in turn without a pause (neither's
// snapshot holds what the other needs, so each reads afresh), and
// prefix.resource.pprof and prefix.cadvisor.pprof while /metrics/resource
// or /metrics/cadvisor is called once past each snapshot's age (the
// others' snapshots would serve /metrics/resource).
func (a *agentProc) statsProfiles(prefix string) error {
	const d = 30 * time.Second
	for _, run := range []struct {
		name  string
		paths []string
		pause time.Duration
	}{
		{"summary-cadvisor", []string{"/stats/summary", "/metrics/cadvisor"}, 0},
		{"resource", []string{"/metrics/resource"}, 1050 * time.Millisecond},
		// As a scraper reads it: fresh, after a pause (what the timed
		// calls measure), not in a hot loop.
		{"cadvisor", []string{"/metrics/cadvisor"}, 1050 * time.Millisecond},
	} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.saveProfile(prefix+"."+run.name+".pprof", d)
		}()
		calls := 0
		var err error
	calling:
		for end := time.Now().Add(d); time.Now().Before(end); {
			for _, path := range run.paths {
				_, code, gerr := a.get(path)
				switch {
				case gerr != nil:
					err = fmt.Errorf("%s: %w", path, gerr)
					break calling
				case code != http.StatusOK:
					err = fmt.Errorf("%s: HTTP %d", path, code)
					break calling
				}
				calls++
			}
			time.Sleep(run.pause)
		}
		<-done
		if err != nil {
			return err
		}
		fmt.Printf("  profile %s.%s.pprof: %d calls over %v\n", prefix, run.name, calls, d)
	}
	return nil
}

// threadsCPU is the CPU time of the process pid's threads, to the
// nanosecond: the sum of each one's time on a CPU (the first field of
// /proc/<pid>/task/<tid>/schedstat). /proc/<pid>/stat counts in clock
// ticks of 10 ms, as long as a fresh read of a stats endpoint; a thread
// that ends between two sums takes its time out of the second (the Go
// runtime seldom ends one).
func threadsCPU(pid int) (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var total time.Duration
	read := 0
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // ended meanwhile, or a kernel without schedstat
		}
		read++
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: %w", dir, t.Name(), err)
		}
		total += time.Duration(ns)
	}
	if read == 0 { // no schedstat: ticks it is
		cpu, _, err := procStat(pid)
		return cpu, err
	}
	return total, nil
}

func (a *agentProc) get(path string) ([]byte, int, error) {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(a.port) + path)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}
