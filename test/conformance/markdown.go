package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}

// Summary is the one line the README shows.
func (rep *Report) Summary() string {
	t := rep.Totals
	also := ""
	if rep.NodeLists != nil {
		also = fmt.Sprintf(" (%d when the node may list configMaps and secrets)", t.NodeListsPassed)
	}
	return fmt.Sprintf("%s passes %d of %d%s, the kubelet %d of %d (Kubernetes %s, %s)",
		minikubeletLabel(rep.Minikubelet), t.MinikubeletPassed, t.Specs, also, t.KubeletPassed, t.Specs, rep.Kubelet.KubeVersion, rep.Generated.Format("2006-01-02"))
}

// minikubeletLabel names minikubelet's run: whether its node could list
// configMaps and secrets, beyond a production node's rights.
func minikubeletLabel(m Meta) string {
	if m.NodeListsObjects {
		return "minikubelet (the node may list configMaps and secrets)"
	}
	return "minikubelet"
}

// WriteMarkdown writes the report for people: versions and date, totals,
// the failures of minikubelet that the kubelet passes grouped by cause,
// the failures of both, the skips, then one row per spec.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	m, k, t := rep.Minikubelet, rep.Kubelet, rep.Totals
	var b strings.Builder
	fmt.Fprintf(&b, "# Kubernetes conformance: minikubelet and the kubelet side by side\n\n")
	fmt.Fprintf(&b, "Generated %s by `make conformance` (test/conformance). %s.\n\n", rep.Generated.Format("2006-01-02 15:04 UTC"), rep.Summary())
	fmt.Fprintf(&b, "The [Conformance] specs of [sig-node], and those of [sig-storage] for the node's own volume types "+
		"(configMap, secret, downwardAPI, projected, emptyDir, hostPath, subPath), of `e2e.test` %s, run against a one-node "+
		"cluster on this host (test/cluster): etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy (iptables) "+
		"and CoreDNS %s as host processes, the node on %s. Machine-readable: [results.json](results.json); JUnit: "+
		"[minikubelet](minikubelet-junit.xml.gz), %s[kubelet](kubelet-junit.xml.gz).\n\n", k.KubeVersion, k.CoreDNSVersion, k.ContainerRuntime, nodeListsLink(rep))
	if m.NodeListsObjects && rep.NodeLists == nil {
		fmt.Fprintf(&b, "**This minikubelet run is not a production node's.** In a cluster configured as production is "+
			"(the Node authorizer), minikubelet starts no pod that mounts a service-account token: %s. Each such spec then "+
			"fails only when the suite's pod-start timeout (5 minutes) runs out, which makes that run take hours on this host. "+
			"This run therefore lets the node list and watch configMaps and secrets, to measure everything behind that one gap; "+
			"`CONFORMANCE_RUNS=\"minikubelet minikubelet-node-lists kubelet\" make conformance` adds the production run.\n\n", NodeListCause)
	}
	runs := []Meta{m}
	head := "| | " + minikubeletLabel(m) + " |"
	passed := []int{t.MinikubeletPassed}
	if rep.NodeLists != nil {
		runs = append(runs, *rep.NodeLists)
		head += " minikubelet, the node may list configMaps and secrets |"
		passed = append(passed, t.NodeListsPassed)
	}
	runs = append(runs, k)
	passed = append(passed, t.KubeletPassed)
	b.WriteString(head + " kubelet |\n|---|" + strings.Repeat("---|", len(runs)) + "\n")
	row := func(name string, f func(i int, m Meta) string) {
		b.WriteString("| " + name + " |")
		for i, m := range runs {
			b.WriteString(" " + f(i, m) + " |")
		}
		b.WriteString("\n")
	}
	row("agent", func(_ int, m Meta) string { return cell(m.AgentVersion) })
	row("passed", func(i int, _ Meta) string { return fmt.Sprint(passed[i]) })
	row("suite wall time", func(_ int, m Meta) string { return secs(m.SuiteSeconds) })
	row("cluster start", func(_ int, m Meta) string { return secs(m.ClusterStartSeconds) })
	row("e2e processes", func(_ int, m Meta) string { return fmt.Sprint(m.Procs) })
	row("started", func(_ int, m Meta) string { return m.Started.UTC().Format(time.RFC3339) })
	b.WriteString("\n")
	fmt.Fprintf(&b, "%d specs: %d fail on minikubelet only, %d on both, %d on the kubelet only. Kernel %s, %s.\n\n",
		t.Specs, t.OnlyMinikubeletFails, t.BothFail, t.OnlyKubeletFails, k.KernelVersion, k.OSImage)

	b.WriteString("## Failing on minikubelet, passing on the kubelet, by cause\n\n")
	if rep.NodeLists != nil {
		b.WriteString("A spec that passes once the node may list configMaps and secrets is under that cause; the others are under " +
			"the cause of their failure in that run (they meet the first cause as well, in a production cluster).\n\n")
	}
	rep.writeGroups(&b, func(r Row) bool { return r.failsOnMinikubeletOnly() })
	b.WriteString("## Failing on both\n\n")
	rep.writeGroups(&b, func(r Row) bool { return r.failsOnBoth() })
	if t.OnlyKubeletFails > 0 {
		b.WriteString("## Failing on the kubelet only\n\n")
		for _, r := range rep.Rows {
			if r.failsOnKubeletOnly() {
				fmt.Fprintf(&b, "- %s: %s\n", cell(r.Name), cell(r.Kubelet.FirstLine()))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("## Skipped, and why\n\n")
	for _, s := range rep.Skips {
		fmt.Fprintf(&b, "- `%s`: %s\n", s.Pattern, s.Reason)
	}
	b.WriteString("\n## Every spec\n\n")
	if rep.NodeLists != nil {
		b.WriteString("| spec | minikubelet | s | node may list | s | kubelet | s | first failure line |\n|---|---|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("| spec | minikubelet | s | kubelet | s | first failure line |\n|---|---|---|---|---|---|\n")
	}
	for _, r := range rep.Rows {
		first := ""
		switch {
		case r.Minikubelet != nil && r.Minikubelet.Failed():
			first = r.Minikubelet.FirstLine()
		case r.Kubelet != nil && r.Kubelet.Failed():
			first = "kubelet: " + r.Kubelet.FirstLine()
		}
		if r.NodeLists != nil && r.NodeLists.Failed() && r.Minikubelet != nil && r.Minikubelet.Failed() && r.NodeLists.FirstLine() != first {
			first += " / node may list: " + r.NodeLists.FirstLine()
		}
		fmt.Fprintf(&b, "| %s | %s | %s |", cell(r.Name), state(r.Minikubelet), seconds(r.Minikubelet))
		if rep.NodeLists != nil {
			fmt.Fprintf(&b, " %s | %s |", state(r.NodeLists), seconds(r.NodeLists))
		}
		fmt.Fprintf(&b, " %s | %s | %s |\n", state(r.Kubelet), seconds(r.Kubelet), cell(first))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func nodeListsLink(rep *Report) string {
	if rep.NodeLists == nil {
		return ""
	}
	return "[minikubelet, the node may list](minikubelet-node-lists-junit.xml.gz), "
}

// writeGroups lists the rows pick selects under their causes, the
// largest group first.
func (rep *Report) writeGroups(b *strings.Builder, pick func(Row) bool) {
	groups := map[string][]Row{}
	for _, r := range rep.Rows {
		if pick(r) {
			groups[r.Cause] = append(groups[r.Cause], r)
		}
	}
	if len(groups) == 0 {
		b.WriteString("None.\n\n")
		return
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	slices.SortFunc(names, func(a, c string) int {
		if d := len(groups[c]) - len(groups[a]); d != 0 {
			return d
		}
		return strings.Compare(a, c)
	})
	for _, g := range names {
		fmt.Fprintf(b, "### %s (%d)\n\n", g, len(groups[g]))
		for _, r := range groups[g] {
			res := r.Minikubelet
			switch {
			case r.failsOnBoth() && r.Kubelet != nil:
				res = r.Kubelet
			case r.NodeLists != nil && r.NodeLists.Failed():
				res = r.NodeLists
			}
			line := "did not run"
			if res != nil {
				line = res.FirstLine()
			}
			fmt.Fprintf(b, "- %s: %s\n", cell(r.Name), cell(line))
		}
		b.WriteString("\n")
	}
}

func (r Row) minikubeletFails() bool { return r.Minikubelet == nil || r.Minikubelet.Failed() }
func (r Row) kubeletFails() bool     { return r.Kubelet == nil || r.Kubelet.Failed() }

func (r Row) failsOnMinikubeletOnly() bool { return r.minikubeletFails() && !r.kubeletFails() }
func (r Row) failsOnBoth() bool            { return r.minikubeletFails() && r.kubeletFails() }
func (r Row) failsOnKubeletOnly() bool     { return !r.minikubeletFails() && r.kubeletFails() }

// cell makes text safe in a markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func state(r *Result) string {
	if r == nil {
		return "not run"
	}
	return r.State
}

func seconds(r *Result) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%.1f", r.Seconds)
}

func secs(s float64) string {
	return (time.Duration(s) * time.Second).Round(time.Second).String()
}
