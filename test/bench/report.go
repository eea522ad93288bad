package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// report is every figure of one bench run, written as JSON beside the text.
type report struct {
	When    time.Time `json:"when"`
	Machine machine   `json:"machine"`
	Runtime string    `json:"runtime"`
	// BinaryBytes is the size of the agent's binary: most of its RSS is
	// the pages of it that the agent touches.
	BinaryBytes int64 `json:"binaryBytes,omitempty"`
	// PodStart: manifest write to running on /pods (read from the
	// runtime's CONTAINER_STARTED event on), against the raw CRI calls,
	// in ms.
	PodStart *latencyPair `json:"podStart,omitempty"`
	// PodStartOutside: manifest write to the runtime's CONTAINER_STARTED
	// event of the container, seen from outside the agent (issue 21's
	// measure, without its polling), in the same runs, in ms.
	PodStartOutside *latencyPair `json:"podStartOutside,omitempty"`
	// PodStartPolled: manifest write to running on /pods polled every 5
	// ms from the write (-start-polled), against the raw calls with the
	// same poll alongside, in runs of their own, in ms.
	PodStartPolled *latencyPair `json:"podStartPolled,omitempty"`
	// Batches: one directory write of N pods to all Running, in ms.
	Batches []batch `json:"batches,omitempty"`
	// ConfigEdit: manifest edit to the new version on /pods, in ms.
	ConfigEdit *latency `json:"configEdit,omitempty"`
	// Steady: the agent's CPU and RSS at steady state by PLEG mode and
	// pod count.
	Steady []steady `json:"steady,omitempty"`
	// Death: a container killed outside the agent to /pods, by mode.
	Death []death `json:"death,omitempty"`
	// GraceKill: how long after the grace deadline a container ignoring
	// SIGTERM was dead, in ms.
	GraceKill *latency `json:"graceKill,omitempty"`
	// Probes: CPU with 100 probed pods.
	Probes *steady `json:"probes,omitempty"`
	// Eviction: memory.available crossed to the evicted pod's processes
	// dead, by mode (notifications, polling).
	Eviction []eviction `json:"eviction,omitempty"`
	// Stats: the stats endpoints with running pods (stats.go).
	Stats []statsEndpoint `json:"stats,omitempty"`
	// Cluster: streaming through the apiserver, minikubelet and the
	// kubelet side by side in the one-node cluster (cluster.go).
	Cluster *clusterReport `json:"clusterStreaming,omitempty"`
	// ClusterNode: pods created in the API to Running and the node's
	// apiserver requests, minikubelet and the kubelet side by side in the
	// same clusters (nodeapi.go).
	ClusterNode *nodeReport `json:"clusterNode,omitempty"`
}

type machine struct {
	CPUs   int    `json:"cpus"`
	Kernel string `json:"kernel"`
	OS     string `json:"os"`
	Model  string `json:"cpuModel"`
	MemMiB int64  `json:"memMiB"`
	// DyingMemcgs: removed memory cgroups the kernel still held when the
	// run began (checkMemcgs).
	DyingMemcgs int `json:"dyingMemcgs"`
}

type latency struct {
	N        int     `json:"n"`
	MedianMs float64 `json:"medianMs"`
	P90Ms    float64 `json:"p90Ms"`
	P99Ms    float64 `json:"p99Ms"`
	MaxMs    float64 `json:"maxMs"`
}

type latencyPair struct {
	Raw   latency `json:"rawCRI"`
	Agent latency `json:"minikubelet"`
	Ratio float64 `json:"ratioOfMedians"`
}

// batch is a batch of host-network pods written at once: all Running on
// /pods, then all gone from the runtime, against the raw CRI calls for the
// same pods with the same parallelism, measured just before (rawbatch.go).
type batch struct {
	Pods        int     `json:"pods"`
	Ms          float64 `json:"allRunningMs"`
	RawMs       float64 `json:"rawAllStartedMs"`
	Ratio       float64 `json:"ratio"`
	RemoveMs    float64 `json:"allGoneMs"`
	RawRemoveMs float64 `json:"rawAllRemovedMs"`
	RemoveRatio float64 `json:"removeRatio"`
}

type steady struct {
	Mode       string  `json:"mode"`
	Pods       int     `json:"pods"`
	CPUPercent float64 `json:"cpuPercentOfOneCore"`
	RSSMiB     float64 `json:"rssMiB"`
	// AnonMiB is the anonymous part of RSS (heap, stacks); the rest is
	// pages of the agent's binary, shared with the page cache.
	AnonMiB float64 `json:"rssAnonMiB"`
}

// statsEndpoint is one stats endpoint's cost: latency of reads made
// afresh and served from the snapshot, and the agent's CPU per fresh read.
type statsEndpoint struct {
	Path              string  `json:"path"`
	Pods              int     `json:"pods"`
	Fresh             latency `json:"fresh"`
	CPUMsPerFreshCall float64 `json:"agentCPUMsPerFreshCall"`
	Cached            latency `json:"fromSnapshot"`
	Bytes             int     `json:"bytes"`
}

// death is one mode's kill timings. For the raw calls and the evented
// agent, Detect is the kill to the runtime's CONTAINER_STOPPED event and
// Replace to the replacement's CONTAINER_STARTED, with nothing polled; for
// the relist agent, both are /pods, polled (terminated, then the
// replacement running). OnPods is the replacement running on /pods.
type death struct {
	Mode    string  `json:"mode"`
	Detect  latency `json:"detect"`
	Replace latency `json:"replacementStarted"`
	OnPods  latency `json:"replacementOnPods,omitzero"`
}

type eviction struct {
	Mode   string  `json:"mode"`
	Killed latency `json:"thresholdCrossedToKilled"`
	// OOMKilledFirst counts the runs in which the kernel's OOM killer
	// killed the pod before it was evicted.
	OOMKilledFirst int `json:"oomKilledFirst"`
}

func summarize(d []time.Duration) latency {
	if len(d) == 0 {
		return latency{}
	}
	return latency{N: len(d), MedianMs: ms(median(d)), P90Ms: ms(pct(d, 0.9)), P99Ms: ms(pct(d, 0.99)), MaxMs: ms(pct(d, 1))}
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				m.OS = strings.Trim(v, `"`)
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.Model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				_, _ = fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			}
		}
		m.MemMiB = kb / 1024
	}
	return m
}

func (r *report) write(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// replotReport draws the plot of the report JSON at path into plotPath.
func replotReport(path, plotPath string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return r.plot(plotPath)
}
