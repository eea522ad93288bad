package stats

import (
	"context"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/cgroups"
)

// defaultInterface is the interface the kubelet reports as a pod's or the
// node's network figures; every interface is listed besides.
const defaultInterface = "eth0"

// Summary returns the node's and its pods' usage in the kubelet's Summary
// API shape. With onlyCPUAndMemory it leaves out network, process and
// filesystem figures, as the kubelet's ?only_cpu_and_memory=true does,
// and reads only the cgroup files of the figures it keeps. The
// filesystem figures of the runtime (image filesystem, writable layers)
// and of the node are those of cachedFs; the pods' logs and volumes are
// measured at each call.
func (p *Provider) Summary(ctx context.Context, onlyCPUAndMemory bool) *statsapi.Summary {
	n := needSummary
	if onlyCPUAndMemory {
		n = needResource
	}
	snap := p.snapshot(ctx, n)
	s := p.summaryOf(snap, onlyCPUAndMemory)
	if !onlyCPUAndMemory {
		p.addFs(ctx, s, snap)
	}
	return s
}

// summaryOf builds the summary of one snapshot.
func (p *Provider) summaryOf(snap *snapshot, onlyCPUAndMemory bool) *statsapi.Summary {
	t := metav1.NewTime(snap.at)
	out := &statsapi.Summary{
		Node: statsapi.NodeStats{NodeName: p.cfg.NodeName, StartTime: metav1.NewTime(p.bootTime)},
		Pods: make([]statsapi.PodStats, 0, len(snap.podList)),
	}
	if snap.node != nil {
		out.Node.CPU = cpuStats(snap.node, t)
		out.Node.Memory = memoryStats(snap.node.stats, t, p.cfg.MachineMemory)
	}
	if !onlyCPUAndMemory && len(snap.nodeNet) > 0 {
		out.Node.Network = networkStats(snap.nodeNet, t)
	}
	if !onlyCPUAndMemory {
		out.Node.Rlimit = p.rlimit(t)
	}
	if snap.pods != nil {
		out.Node.SystemContainers = []statsapi.ContainerStats{{
			Name:      statsapi.SystemContainerPods,
			StartTime: metav1.NewTime(p.bootTime),
			CPU:       cpuStats(snap.pods, t),
			Memory:    memoryStats(snap.pods.stats, t, p.cfg.MachineMemory),
		}}
	}
	for _, ps := range snap.podList {
		pod := statsapi.PodStats{
			PodRef:     statsapi.PodReference{Name: ps.pod.Name, Namespace: ps.pod.Namespace, UID: string(ps.pod.UID)},
			StartTime:  metav1.NewTime(ps.pod.StartTime),
			Containers: make([]statsapi.ContainerStats, 0, len(ps.containers)),
		}
		for _, cs := range ps.containers {
			pod.Containers = append(pod.Containers, statsapi.ContainerStats{
				Name:      cs.c.Name,
				StartTime: metav1.NewTime(cs.c.StartTime),
				CPU:       cpuStats(cs.s, t),
				Memory:    memoryStats(cs.s.stats, t, 0),
			})
		}
		own := ps.own
		if own == nil {
			own = sumContainers(ps.containers)
		}
		if own != nil {
			pod.CPU = cpuStats(own, t)
			pod.Memory = memoryStats(own.stats, t, 0)
		}
		if !onlyCPUAndMemory {
			if len(ps.net) > 0 {
				pod.Network = networkStats(ps.net, t)
			}
			n := uint64(ps.procs)
			pod.ProcessStats = &statsapi.ProcessStats{ProcessCount: &n}
		}
		out.Pods = append(out.Pods, pod)
	}
	return out
}

// SummaryHandler serves GET /stats/summary (and ?only_cpu_and_memory=true)
// as JSON.
func (p *Provider) SummaryHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		only := r.URL.Query().Get("only_cpu_and_memory") == "true"
		s := p.Summary(r.Context(), only)
		w.Header().Set("Content-Type", "application/json")
		_ = writeSummary(w, s, p.jsonBufs) // a client gone
	})
}

func cpuStats(s *sample, t metav1.Time) *statsapi.CPUStats {
	usage := s.stats.CPU.UsageNanos
	return &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: &usage, UsageNanoCores: s.nanoCores}
}

// memoryStats converts a cgroup's memory figures; the available memory is
// what is left below the cgroup's limit, or below capacity when it has
// none (capacity 0: not reported).
func memoryStats(st *cgroups.Stats, t metav1.Time, capacity uint64) *statsapi.MemoryStats {
	m := st.Memory
	out := &statsapi.MemoryStats{
		Time:            t,
		UsageBytes:      ptr(m.Usage),
		WorkingSetBytes: ptr(m.WorkingSet),
		RSSBytes:        ptr(m.RSS),
		PageFaults:      ptr(m.PageFaults),
		MajorPageFaults: ptr(m.MajorPageFaults),
	}
	limit := m.Limit
	if limit == 0 {
		limit = capacity
	}
	if limit > 0 {
		avail := uint64(0)
		if limit > m.WorkingSet {
			avail = limit - m.WorkingSet
		}
		out.AvailableBytes = &avail
	}
	return out
}

func networkStats(ifs []netInterface, t metav1.Time) *statsapi.NetworkStats {
	out := &statsapi.NetworkStats{Time: t}
	for _, i := range ifs {
		is := statsapi.InterfaceStats{Name: i.Name, RxBytes: ptr(i.RxBytes), RxErrors: ptr(i.RxErrors), TxBytes: ptr(i.TxBytes), TxErrors: ptr(i.TxErrors)}
		out.Interfaces = append(out.Interfaces, is)
		if i.Name == defaultInterface {
			out.InterfaceStats = is
		}
	}
	if out.Name == "" && len(out.Interfaces) > 0 {
		out.InterfaceStats = out.Interfaces[0]
	}
	return out
}

// sumContainers adds up the containers of a pod that has no cgroup of its
// own; nil when it has none. The rate is summed only when every container
// has one.
func sumContainers(cs []containerSample) *sample {
	if len(cs) == 0 {
		return nil
	}
	sum := &sample{stats: &cgroups.Stats{}}
	var rate uint64
	haveRate := true
	for _, c := range cs {
		st := c.s.stats
		sum.stats.CPU.UsageNanos += st.CPU.UsageNanos
		sum.stats.Memory.Usage += st.Memory.Usage
		sum.stats.Memory.WorkingSet += st.Memory.WorkingSet
		sum.stats.Memory.RSS += st.Memory.RSS
		sum.stats.Memory.PageFaults += st.Memory.PageFaults
		sum.stats.Memory.MajorPageFaults += st.Memory.MajorPageFaults
		if c.s.nanoCores == nil {
			haveRate = false
		} else {
			rate += *c.s.nanoCores
		}
	}
	if haveRate {
		sum.nanoCores = &rate
	}
	return sum
}

func ptr[T any](v T) *T { return &v }
