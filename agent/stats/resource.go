package stats

import (
	"net/http"
)

// ResourceHandler serves GET /metrics/resource: the CPU and memory
// figures of the node, its pods and their containers from the Summary
// API's snapshot (Summary with only CPU and memory), each sample carrying
// the time it was read, as the kubelet serves them, which metrics-server
// scrapes for `kubectl top` and the autoscalers: names, help texts and
// labels as the kubelet's. No swap figures: the cgroup reader has none.
// It reads only the cgroup files these figures come from; the body is
// written in the text format (promtext.go) from the snapshot itself, with
// the figures summaryOf gives, without making a Summary.
func (p *Provider) ResourceHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap := p.snapshot(r.Context(), needResource)
		out, end := metricsResponse(w, r, p.gzip)
		defer end()
		t := newTextWriter(out, p.textBufs)
		defer t.release(p.textBufs)
		p.writeResource(t, snap)
		_ = t.flush() // a client gone
	})
}

// writeResource writes the resource metrics of snap, in the order of
// their names.
func (p *Provider) writeResource(t *textWriter, snap *snapshot) {
	ms := snap.at.UnixMilli()
	cpu := func(s *sample, pairs ...string) {
		t.sample(float64(s.stats.CPU.UsageNanos)/nanos, ms, pairs...)
	}
	memory := func(s *sample, pairs ...string) {
		t.sample(float64(s.stats.Memory.WorkingSet), ms, pairs...)
	}
	// Each container's label pairs, and its pod's; kept between scrapes.
	type podRow struct {
		ps         *podSample
		own        *sample // the pod's figures; nil for none
		containers []*[len(baseLabels)]string
		pairs      *[len(baseLabels)]string
	}
	l := p.resourceLabels
	l.mu.Lock()
	l.gen++
	rows := make([]podRow, len(snap.podList))
	for i := range snap.podList {
		ps := &snap.podList[i]
		r := &rows[i]
		r.ps, r.own = ps, ps.own
		if r.own == nil {
			r.own = sumContainers(ps.containers)
		}
		r.pairs = l.rowPairs(string(ps.pod.UID), // no cgroup path is a UID
			[len(baseLabels)]string{4: ps.pod.Namespace, 5: ps.pod.Name})
		for _, cs := range ps.containers {
			r.containers = append(r.containers, l.rowPairs(cs.s.path, [len(baseLabels)]string{0: cs.c.Name, 4: ps.pod.Namespace, 5: ps.pod.Name}))
		}
	}
	l.prune()
	l.mu.Unlock()
	const container, namespace, pod = 0, 4, 5
	containers := func(f func(cs *containerSample, pairs ...string)) {
		for _, r := range rows {
			for j := range r.ps.containers {
				lp := r.containers[j]
				f(&r.ps.containers[j], lp[container], lp[namespace], lp[pod])
			}
		}
	}
	t.family("container_cpu_usage_seconds_total", "Cumulative cpu time consumed by the container in core-seconds", counter)
	containers(func(cs *containerSample, pairs ...string) { cpu(cs.s, pairs...) })
	t.family("container_memory_working_set_bytes", "Current working set of the container in bytes", gauge)
	containers(func(cs *containerSample, pairs ...string) { memory(cs.s, pairs...) })
	t.family("container_start_time_seconds", "Start time of the container since unix epoch in seconds", gauge)
	containers(func(cs *containerSample, pairs ...string) {
		if cs.c.StartTime.Unix() > 0 {
			t.sample(unix(cs.c.StartTime), -1, pairs...)
		}
	})
	t.family("node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds", counter)
	if snap.node != nil {
		cpu(snap.node)
	}
	t.family("node_memory_working_set_bytes", "Current working set of the node in bytes", gauge)
	if snap.node != nil {
		memory(snap.node)
	}
	t.family("pod_cpu_usage_seconds_total", "Cumulative cpu time consumed by the pod in core-seconds", counter)
	for _, r := range rows {
		if r.own != nil {
			cpu(r.own, r.pairs[namespace], r.pairs[pod])
		}
	}
	t.family("pod_memory_working_set_bytes", "Current working set of the pod in bytes", gauge)
	for _, r := range rows {
		if r.own != nil {
			memory(r.own, r.pairs[namespace], r.pairs[pod])
		}
	}
	v := 0.0
	if snap.errors > 0 {
		v = 1
	}
	t.family("resource_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", gauge)
	t.sample(v, -1)
	t.family("scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", gauge)
	t.sample(v, -1)
}
