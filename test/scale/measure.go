package scale

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// counters are the apiserver's request counters at one moment.
type counters struct {
	at time.Time
	// nodes sums apiserver_flowcontrol_dispatched_requests_total over the
	// flow schemas of system:nodes.
	nodes float64
	// byVerb is apiserver_request_total summed by "VERB resource[/sub]".
	byVerb map[string]float64
}

// nodeFlowSchemas names the flow schemas whose subjects include the group
// system:nodes (system-node-high and system-nodes by default): the
// apiserver files every node's requests under one of them.
func nodeFlowSchemas(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	list, err := client.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list flow schemas: %w", err)
	}
	var out []string
	for _, fs := range list.Items {
		for _, r := range fs.Spec.Rules {
			if slices.ContainsFunc(r.Subjects, func(s flowcontrolv1.Subject) bool {
				return s.Kind == flowcontrolv1.SubjectKindGroup && s.Group != nil && s.Group.Name == "system:nodes"
			}) && !slices.Contains(out, fs.Name) {
				out = append(out, fs.Name)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no flow schema has the subject group system:nodes (is API priority and fairness off?)")
	}
	sort.Strings(out)
	return out, nil
}

// scrape reads the apiserver's /metrics.
func scrape(ctx context.Context, client kubernetes.Interface, schemas []string) (counters, error) {
	body, err := client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return counters{}, fmt.Errorf("read the apiserver's metrics: %w", err)
	}
	c, err := parseCounters(body, schemas)
	c.at = time.Now()
	return c, err
}

// parseCounters reads the counters out of a /metrics body.
func parseCounters(body []byte, schemas []string) (counters, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return counters{}, fmt.Errorf("parse the apiserver's metrics: %w", err)
	}
	c := counters{byVerb: map[string]float64{}}
	if f := families["apiserver_flowcontrol_dispatched_requests_total"]; f != nil {
		for _, m := range f.GetMetric() {
			if slices.Contains(schemas, label(m, "flow_schema")) {
				c.nodes += m.GetCounter().GetValue()
			}
		}
	}
	if f := families["apiserver_request_total"]; f != nil {
		for _, m := range f.GetMetric() {
			key := label(m, "verb") + " " + label(m, "resource")
			if sub := label(m, "subresource"); sub != "" {
				key += "/" + sub
			}
			c.byVerb[key] += m.GetCounter().GetValue()
		}
	}
	return c, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// rates are the counters' increase from a to b per minute.
func rates(a, b counters) (nodes float64, byVerb map[string]float64) {
	minutes := b.at.Sub(a.at).Minutes()
	if minutes <= 0 {
		return 0, nil
	}
	byVerb = map[string]float64{}
	for k, v := range b.byVerb {
		if d := v - a.byVerb[k]; d > 0 {
			byVerb[k] = d / minutes
		}
	}
	return (b.nodes - a.nodes) / minutes, byVerb
}

// cpuTime is a process's user and system CPU time so far.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	fields := strings.Fields(string(b[i+2:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime or stime", pid)
	}
	const userHZ = 100
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// memory is a process's resident memory, in bytes.
type memory struct {
	rss, anon, pss int64
}

// readMemory reads VmRSS and RssAnon from /proc/<pid>/status and Pss from
// /proc/<pid>/smaps_rollup.
func readMemory(pid int) (memory, error) {
	var m memory
	status, err := kbFields(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:", "RssAnon:")
	if err != nil {
		return m, err
	}
	rollup, err := kbFields(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
	if err != nil {
		return m, err
	}
	return memory{rss: status[0], anon: status[1], pss: rollup[0]}, nil
}

// kbFields reads the "Name: N kB" lines named from a /proc file, in
// bytes, in the order asked.
func kbFields(path string, names ...string) ([]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := make([]int64, len(names))
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if i := slices.Index(names, fields[0]); i >= 0 {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", path, fields[0], err)
			}
			out[i] = kb << 10
			found++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if found < len(names) {
		return nil, fmt.Errorf("%s lacks one of %v", path, names)
	}
	return out, nil
}

// memAvailable is the host's MemAvailable, in bytes.
func memAvailable() (int64, error) {
	v, err := kbFields("/proc/meminfo", "MemAvailable:")
	if err != nil {
		return 0, err
	}
	return v[0], nil
}
