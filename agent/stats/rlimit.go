package stats

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// rlimit reads the node's task limit and count as the kubelet's Summary
// reports them (node.rlimit, what pid.available is computed from): the
// smaller of kernel.pid_max and kernel.threads-max, and the number of
// tasks (threads) that exist, from /proc/loadavg. Figures that cannot be
// read are left out.
func (p *Provider) rlimit(at metav1.Time) *statsapi.RlimitStats {
	out := &statsapi.RlimitStats{Time: at}
	limit := int64(-1)
	for _, f := range []string{"sys/kernel/pid_max", "sys/kernel/threads-max"} {
		b, err := os.ReadFile(filepath.Join(p.cfg.ProcRoot, f)) //nolint:gosec // G304: procfs
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && (limit < 0 || v < limit) {
			limit = v
		}
	}
	if limit >= 0 {
		out.MaxPID = &limit
	}
	// "0.10 0.20 0.30 2/345 6789": the fourth field is running/total.
	if b, err := os.ReadFile(filepath.Join(p.cfg.ProcRoot, "loadavg")); err == nil {
		if fields := strings.Fields(string(b)); len(fields) >= 4 {
			if _, total, ok := strings.Cut(fields[3], "/"); ok {
				if n, err := strconv.ParseInt(total, 10, 64); err == nil {
					out.NumOfRunningProcesses = &n
				}
			}
		}
	}
	return out
}
