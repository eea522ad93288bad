package cluster

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// iptablesTools are the IPv4 and IPv6 front ends; kube-proxy and the
// kubelet write chains through both.
var iptablesTools = []string{"iptables", "ip6tables"}

// kubeChains lists, per tool and table, the KUBE-* chains there now:
// "iptables/filter" -> ["KUBE-FIREWALL", ...]. A missing tool lists
// nothing.
func kubeChains(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	for _, tool := range iptablesTools {
		if _, err := exec.LookPath(tool + "-save"); err != nil {
			continue
		}
		save, err := exec.CommandContext(ctx, tool+"-save").Output()
		if err != nil {
			return nil, fmt.Errorf("%s-save: %w", tool, err)
		}
		table := ""
		for line := range strings.SplitSeq(string(save), "\n") {
			switch {
			case strings.HasPrefix(line, "*"):
				table = line[1:]
			case strings.HasPrefix(line, ":KUBE-"):
				name, _, _ := strings.Cut(line[1:], " ")
				key := tool + "/" + table
				out[key] = append(out[key], name)
			}
		}
	}
	return out, nil
}

// removeNewKubeChains removes the KUBE-* chains that were not there
// before: first every rule that jumps to one, then the chains. kube-proxy
// --cleanup leaves the chains it shares with the kubelet (KUBE-FIREWALL),
// and the kubelet removes none of its own.
func removeNewKubeChains(ctx context.Context, before map[string][]string) error {
	now, err := kubeChains(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for key, chains := range now {
		tool, table, _ := strings.Cut(key, "/")
		var added []string
		for _, c := range chains {
			if !slices.Contains(before[key], c) {
				added = append(added, c)
			}
		}
		if len(added) == 0 {
			continue
		}
		rules, err := exec.CommandContext(ctx, tool, "-t", table, "-S").Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s -t %s -S: %w", tool, table, err))
			continue
		}
		for rule := range strings.SplitSeq(string(rules), "\n") {
			fields := strings.Fields(rule)
			j := slices.Index(fields, "-j")
			if len(fields) < 2 || fields[0] != "-A" || j < 0 || j+1 >= len(fields) || !slices.Contains(added, fields[j+1]) ||
				slices.Contains(added, fields[1]) {
				continue
			}
			// -S quotes comments; the rule goes back to iptables split as
			// a shell would, which -S's quoting allows.
			args := append([]string{"-t", table, "-D"}, shellFields(strings.Join(fields[1:], " "))...)
			if out, err := exec.CommandContext(ctx, tool, args...).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w: %s", tool, strings.Join(args, " "), err, out))
			}
		}
		for _, verb := range []string{"-F", "-X"} {
			for _, c := range added {
				if out, err := exec.CommandContext(ctx, tool, "-t", table, verb, c).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s -t %s %s %s: %w: %s", tool, table, verb, c, err, out))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// shellFields splits s at spaces outside double quotes, dropping the
// quotes, as iptables -S quotes a comment.
func shellFields(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, inField := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inField = !quoted, true
		case r == ' ' && !quoted:
			if inField {
				out = append(out, cur.String())
				cur.Reset()
				inField = false
			}
		default:
			cur.WriteRune(r)
			inField = true
		}
	}
	if inField {
		out = append(out, cur.String())
	}
	return out
}
