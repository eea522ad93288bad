package stats

import (
	"net/http"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// ResourceHandler serves GET /metrics/resource: the CPU and memory
// figures of the node, its pods and their containers from the Summary
// API's snapshot (Summary with only CPU and memory), each sample carrying
// the time it was read, as the kubelet serves them, which metrics-server
// scrapes for `kubectl top` and the autoscalers: names, help texts and
// labels as the kubelet's. No swap figures: the cgroup reader has none.
// It reads only the cgroup files these figures come from; the body is
// written in the text format (promtext.go).
func (p *Provider) ResourceHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap := p.snapshot(r.Context(), needResource)
		s := p.summaryOf(snap, true)
		out, end := metricsResponse(w, r, p.gzip)
		defer end()
		t := newTextWriter(out, p.textBufs)
		defer t.release(p.textBufs)
		writeResource(t, s, snap.errors > 0)
		_ = t.flush() // a client gone
	})
}

// writeResource writes the resource metrics of summary s, in the order of
// their names.
func writeResource(t *textWriter, s *statsapi.Summary, failed bool) {
	ms := func(at time.Time) int64 { return at.UnixMilli() }
	cpu := func(c *statsapi.CPUStats, pairs ...string) {
		if c != nil && c.UsageCoreNanoSeconds != nil {
			t.sample(float64(*c.UsageCoreNanoSeconds)/nanos, ms(c.Time.Time), pairs...)
		}
	}
	memory := func(m *statsapi.MemoryStats, pairs ...string) {
		if m != nil && m.WorkingSetBytes != nil {
			t.sample(float64(*m.WorkingSetBytes), ms(m.Time.Time), pairs...)
		}
	}
	// Pods' and containers' label pairs, sorted by name.
	podPairs := make([][2]string, len(s.Pods))
	ctrPairs := make([][]string, len(s.Pods))
	for i := range s.Pods {
		pod := &s.Pods[i]
		podPairs[i] = [2]string{pair("namespace", pod.PodRef.Namespace), pair("pod", pod.PodRef.Name)}
		for j := range pod.Containers {
			ctrPairs[i] = append(ctrPairs[i], pair("container", pod.Containers[j].Name))
		}
	}
	containers := func(f func(c *statsapi.ContainerStats, pairs ...string)) {
		for i := range s.Pods {
			for j := range s.Pods[i].Containers {
				f(&s.Pods[i].Containers[j], ctrPairs[i][j], podPairs[i][0], podPairs[i][1])
			}
		}
	}
	t.family("container_cpu_usage_seconds_total", "Cumulative cpu time consumed by the container in core-seconds", counter)
	containers(func(c *statsapi.ContainerStats, pairs ...string) { cpu(c.CPU, pairs...) })
	t.family("container_memory_working_set_bytes", "Current working set of the container in bytes", gauge)
	containers(func(c *statsapi.ContainerStats, pairs ...string) { memory(c.Memory, pairs...) })
	t.family("container_start_time_seconds", "Start time of the container since unix epoch in seconds", gauge)
	containers(func(c *statsapi.ContainerStats, pairs ...string) {
		if c.StartTime.Unix() > 0 {
			t.sample(unix(c.StartTime.Time), -1, pairs...)
		}
	})
	t.family("node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds", counter)
	cpu(s.Node.CPU)
	t.family("node_memory_working_set_bytes", "Current working set of the node in bytes", gauge)
	memory(s.Node.Memory)
	t.family("pod_cpu_usage_seconds_total", "Cumulative cpu time consumed by the pod in core-seconds", counter)
	for i := range s.Pods {
		cpu(s.Pods[i].CPU, podPairs[i][0], podPairs[i][1])
	}
	t.family("pod_memory_working_set_bytes", "Current working set of the pod in bytes", gauge)
	for i := range s.Pods {
		memory(s.Pods[i].Memory, podPairs[i][0], podPairs[i][1])
	}
	v := 0.0
	if failed {
		v = 1
	}
	t.family("resource_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", gauge)
	t.sample(v, -1)
	t.family("scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", gauge)
	t.sample(v, -1)
}
