package stats

import (
	"encoding/json"
	"io"
	"math"
	"sort"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The Summary is written as JSON by the functions below rather than by
// encoding/json, whose reflective walk of its some 5,000 values (most of
// them pointers, and each time through metav1.Time's MarshalJSON) cost
// 1.3 ms of the agent's CPU per call at 100 pods and twice the bytes of
// the body in garbage. The output is byte for byte what json.Encoder
// writes (with its default HTML escaping, and a final newline): field
// order, omitempty, null for nil slices and zero times, strings escaped
// as it escapes them, floats in its format. TestSummaryJSON checks it
// against encoding/json on summaries with every field of every type set,
// so that a field added to statsapi fails the test until written here.

// summaryFlushAt is the buffered size at which a Summary being written is
// written out, between pods.
const summaryFlushAt = 32 << 10

// writeSummary writes s to w as json.NewEncoder(w).Encode(s) does,
// through a buffer of bufs. A float that JSON cannot hold (NaN, an
// infinity) makes encoding/json fail before it writes anything; here, a
// summary with one is handed to it.
func writeSummary(w io.Writer, s *statsapi.Summary, bufs *kept[[]byte]) error {
	if !finiteSummary(s) {
		return json.NewEncoder(w).Encode(s)
	}
	b := bufs.get(func() []byte { return make([]byte, 0, summaryFlushAt+8<<10) })[:0]
	defer func() { bufs.put(b[:0]) }()
	b = append(b, `{"node":`...)
	b = appendNodeStats(b, &s.Node)
	b = append(b, `,"pods":`...)
	if s.Pods == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range s.Pods {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPodStats(b, &s.Pods[i])
			if len(b) >= summaryFlushAt {
				if _, err := w.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
		}
		b = append(b, ']')
	}
	b = append(b, "}\n"...)
	_, err := w.Write(b)
	return err
}

// jsonObject appends the fields of one object, each with the separator
// it needs.
type jsonObject struct {
	b     []byte
	first bool
}

func beginObject(b []byte) jsonObject { return jsonObject{b: append(b, '{'), first: true} }

func (o *jsonObject) end() []byte { return append(o.b, '}') }

// key starts the field name, whose name needs no escaping.
func (o *jsonObject) key(name string) {
	if !o.first {
		o.b = append(o.b, ',')
	}
	o.first = false
	o.b = append(o.b, '"')
	o.b = append(o.b, name...)
	o.b = append(o.b, '"', ':')
}

func (o *jsonObject) str(name, v string) {
	o.key(name)
	o.b = appendJSONString(o.b, v)
}

// strOmit is str for a field that is omitted when empty.
func (o *jsonObject) strOmit(name, v string) {
	if v != "" {
		o.str(name, v)
	}
}

func (o *jsonObject) time(name string, t metav1.Time) {
	o.key(name)
	o.b = appendTime(o.b, t)
}

func (o *jsonObject) uint(name string, v uint64) {
	o.key(name)
	o.b = strconv.AppendUint(o.b, v, 10)
}

// uintPtr writes a field that is omitted when nil, as the *uint64 ones.
func (o *jsonObject) uintPtr(name string, v *uint64) {
	if v != nil {
		o.uint(name, *v)
	}
}

func (o *jsonObject) intPtr(name string, v *int64) {
	if v != nil {
		o.key(name)
		o.b = strconv.AppendInt(o.b, *v, 10)
	}
}

func (o *jsonObject) float(name string, v float64) {
	o.key(name)
	o.b = appendJSONFloat(o.b, v)
}

// appendTime appends t as metav1.Time marshals it: null when zero, else
// RFC 3339 in UTC, to the second.
func appendTime(b []byte, t metav1.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

// appendJSONString appends s as encoding/json does: plain when it has only
// printable ASCII that needs no escaping, else through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s) // a string always marshals
			return append(b, quoted...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONFloat appends a finite v as encoding/json does.
func appendJSONFloat(b []byte, v float64) []byte {
	format := byte('f')
	if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if format == 'e' {
		// e-09 as e-9, as encoding/json cleans it up.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func appendNodeStats(b []byte, n *statsapi.NodeStats) []byte {
	o := beginObject(b)
	o.str("nodeName", n.NodeName)
	if len(n.SystemContainers) > 0 {
		o.key("systemContainers")
		o.b = appendContainers(o.b, n.SystemContainers)
	}
	o.time("startTime", n.StartTime)
	o.cpu(n.CPU)
	o.memory(n.Memory)
	o.io(n.IO)
	o.network(n.Network)
	o.fs("fs", n.Fs)
	if n.Runtime != nil {
		o.key("runtime")
		r := beginObject(o.b)
		r.fs("imageFs", n.Runtime.ImageFs)
		r.fs("containerFs", n.Runtime.ContainerFs)
		o.b = r.end()
	}
	if n.Rlimit != nil {
		o.key("rlimit")
		r := beginObject(o.b)
		r.time("time", n.Rlimit.Time)
		r.intPtr("maxpid", n.Rlimit.MaxPID)
		r.intPtr("curproc", n.Rlimit.NumOfRunningProcesses)
		o.b = r.end()
	}
	o.swap(n.Swap)
	return o.end()
}

func appendPodStats(b []byte, p *statsapi.PodStats) []byte {
	o := beginObject(b)
	o.key("podRef")
	ref := beginObject(o.b)
	ref.str("name", p.PodRef.Name)
	ref.str("namespace", p.PodRef.Namespace)
	ref.str("uid", p.PodRef.UID)
	o.b = ref.end()
	o.time("startTime", p.StartTime)
	o.key("containers")
	if p.Containers == nil {
		o.b = append(o.b, "null"...)
	} else {
		o.b = appendContainers(o.b, p.Containers)
	}
	o.cpu(p.CPU)
	o.memory(p.Memory)
	o.io(p.IO)
	o.network(p.Network)
	if len(p.VolumeStats) > 0 {
		o.key("volume")
		o.b = append(o.b, '[')
		for i := range p.VolumeStats {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = appendVolume(o.b, &p.VolumeStats[i])
		}
		o.b = append(o.b, ']')
	}
	o.fs("ephemeral-storage", p.EphemeralStorage)
	if p.ProcessStats != nil {
		o.key("process_stats")
		ps := beginObject(o.b)
		ps.uintPtr("process_count", p.ProcessStats.ProcessCount)
		o.b = ps.end()
	}
	o.swap(p.Swap)
	return o.end()
}

func appendContainers(b []byte, cs []statsapi.ContainerStats) []byte {
	b = append(b, '[')
	for i := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		c := &cs[i]
		o := beginObject(b)
		o.str("name", c.Name)
		o.time("startTime", c.StartTime)
		o.cpu(c.CPU)
		o.memory(c.Memory)
		o.io(c.IO)
		if len(c.Accelerators) > 0 {
			o.key("accelerators")
			o.b = append(o.b, '[')
			for j, a := range c.Accelerators {
				if j > 0 {
					o.b = append(o.b, ',')
				}
				ao := beginObject(o.b)
				ao.str("make", a.Make)
				ao.str("model", a.Model)
				ao.str("id", a.ID)
				ao.uint("memoryTotal", a.MemoryTotal)
				ao.uint("memoryUsed", a.MemoryUsed)
				ao.uint("dutyCycle", a.DutyCycle)
				o.b = ao.end()
			}
			o.b = append(o.b, ']')
		}
		o.fs("rootfs", c.Rootfs)
		o.fs("logs", c.Logs)
		if len(c.UserDefinedMetrics) > 0 {
			o.key("userDefinedMetrics")
			o.b = append(o.b, '[')
			for j := range c.UserDefinedMetrics {
				if j > 0 {
					o.b = append(o.b, ',')
				}
				o.b = appendUserDefinedMetric(o.b, &c.UserDefinedMetrics[j])
			}
			o.b = append(o.b, ']')
		}
		o.swap(c.Swap)
		b = o.end()
	}
	return append(b, ']')
}

func appendUserDefinedMetric(b []byte, m *statsapi.UserDefinedMetric) []byte {
	o := beginObject(b)
	o.str("name", m.Name)
	o.str("type", string(m.Type))
	o.str("units", m.Units)
	if len(m.Labels) > 0 {
		o.key("labels")
		keys := make([]string, 0, len(m.Labels))
		for k := range m.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		lo := beginObject(o.b)
		for _, k := range keys {
			// A key written as encoding/json writes it, escaped.
			if !lo.first {
				lo.b = append(lo.b, ',')
			}
			lo.first = false
			lo.b = appendJSONString(lo.b, k)
			lo.b = append(lo.b, ':')
			lo.b = appendJSONString(lo.b, m.Labels[k])
		}
		o.b = lo.end()
	}
	o.time("time", m.Time)
	o.float("value", m.Value)
	return o.end()
}

func appendVolume(b []byte, v *statsapi.VolumeStats) []byte {
	o := beginObject(b)
	o.fsFields(&v.FsStats)
	o.strOmit("name", v.Name)
	if v.PVCRef != nil {
		o.key("pvcRef")
		r := beginObject(o.b)
		r.str("name", v.PVCRef.Name)
		r.str("namespace", v.PVCRef.Namespace)
		o.b = r.end()
	}
	if v.VolumeHealthStats != nil {
		o.key("volumeHealthStats")
		o.b = append(o.b, `{"abnormal":`...)
		o.b = strconv.AppendBool(o.b, v.VolumeHealthStats.Abnormal)
		o.b = append(o.b, '}')
	}
	return o.end()
}

func (o *jsonObject) cpu(c *statsapi.CPUStats) {
	if c == nil {
		return
	}
	o.key("cpu")
	co := beginObject(o.b)
	co.time("time", c.Time)
	co.uintPtr("usageNanoCores", c.UsageNanoCores)
	co.uintPtr("usageCoreNanoSeconds", c.UsageCoreNanoSeconds)
	co.psi(c.PSI)
	o.b = co.end()
}

func (o *jsonObject) memory(m *statsapi.MemoryStats) {
	if m == nil {
		return
	}
	o.key("memory")
	mo := beginObject(o.b)
	mo.time("time", m.Time)
	mo.uintPtr("availableBytes", m.AvailableBytes)
	mo.uintPtr("usageBytes", m.UsageBytes)
	mo.uintPtr("workingSetBytes", m.WorkingSetBytes)
	mo.uintPtr("rssBytes", m.RSSBytes)
	mo.uintPtr("pageFaults", m.PageFaults)
	mo.uintPtr("majorPageFaults", m.MajorPageFaults)
	mo.psi(m.PSI)
	o.b = mo.end()
}

func (o *jsonObject) io(s *statsapi.IOStats) {
	if s == nil {
		return
	}
	o.key("io")
	so := beginObject(o.b)
	so.time("time", s.Time)
	so.psi(s.PSI)
	o.b = so.end()
}

func (o *jsonObject) psi(p *statsapi.PSIStats) {
	if p == nil {
		return
	}
	o.key("psi")
	po := beginObject(o.b)
	for _, d := range []struct {
		name string
		data *statsapi.PSIData
	}{{"full", &p.Full}, {"some", &p.Some}} {
		po.key(d.name)
		do := beginObject(po.b)
		do.uint("total", d.data.Total)
		do.float("avg10", d.data.Avg10)
		do.float("avg60", d.data.Avg60)
		do.float("avg300", d.data.Avg300)
		po.b = do.end()
	}
	o.b = po.end()
}

func (o *jsonObject) network(n *statsapi.NetworkStats) {
	if n == nil {
		return
	}
	o.key("network")
	no := beginObject(o.b)
	no.time("time", n.Time)
	no.interfaceFields(&n.InterfaceStats)
	if len(n.Interfaces) > 0 {
		no.key("interfaces")
		no.b = append(no.b, '[')
		for i := range n.Interfaces {
			if i > 0 {
				no.b = append(no.b, ',')
			}
			ifo := beginObject(no.b)
			ifo.interfaceFields(&n.Interfaces[i])
			no.b = ifo.end()
		}
		no.b = append(no.b, ']')
	}
	o.b = no.end()
}

func (o *jsonObject) interfaceFields(i *statsapi.InterfaceStats) {
	o.str("name", i.Name)
	o.uintPtr("rxBytes", i.RxBytes)
	o.uintPtr("rxErrors", i.RxErrors)
	o.uintPtr("txBytes", i.TxBytes)
	o.uintPtr("txErrors", i.TxErrors)
}

// fs writes a *FsStats field, omitted when nil.
func (o *jsonObject) fs(name string, f *statsapi.FsStats) {
	if f == nil {
		return
	}
	o.key(name)
	fo := beginObject(o.b)
	fo.fsFields(f)
	o.b = fo.end()
}

func (o *jsonObject) fsFields(f *statsapi.FsStats) {
	o.time("time", f.Time)
	o.uintPtr("availableBytes", f.AvailableBytes)
	o.uintPtr("capacityBytes", f.CapacityBytes)
	o.uintPtr("usedBytes", f.UsedBytes)
	o.uintPtr("inodesFree", f.InodesFree)
	o.uintPtr("inodes", f.Inodes)
	o.uintPtr("inodesUsed", f.InodesUsed)
}

func (o *jsonObject) swap(s *statsapi.SwapStats) {
	if s == nil {
		return
	}
	o.key("swap")
	so := beginObject(o.b)
	so.time("time", s.Time)
	so.uintPtr("swapAvailableBytes", s.SwapAvailableBytes)
	so.uintPtr("swapUsageBytes", s.SwapUsageBytes)
	o.b = so.end()
}

// finiteSummary reports whether every float of s is finite: those of PSI
// figures and user-defined metrics, which the Provider does not fill.
func finiteSummary(s *statsapi.Summary) bool {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	psi := func(p *statsapi.PSIStats) bool {
		if p == nil {
			return true
		}
		for _, d := range []statsapi.PSIData{p.Full, p.Some} {
			if !finite(d.Avg10) || !finite(d.Avg60) || !finite(d.Avg300) {
				return false
			}
		}
		return true
	}
	figures := func(c *statsapi.CPUStats, m *statsapi.MemoryStats, d *statsapi.IOStats) bool {
		return (c == nil || psi(c.PSI)) && (m == nil || psi(m.PSI)) && (d == nil || psi(d.PSI))
	}
	containers := func(cs []statsapi.ContainerStats) bool {
		for i := range cs {
			c := &cs[i]
			if !figures(c.CPU, c.Memory, c.IO) {
				return false
			}
			for _, m := range c.UserDefinedMetrics {
				if !finite(m.Value) {
					return false
				}
			}
		}
		return true
	}
	if !figures(s.Node.CPU, s.Node.Memory, s.Node.IO) || !containers(s.Node.SystemContainers) {
		return false
	}
	for i := range s.Pods {
		p := &s.Pods[i]
		if !figures(p.CPU, p.Memory, p.IO) || !containers(p.Containers) {
			return false
		}
	}
	return true
}
