package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Pods runs `minikubelet pods`: the node's pods as `kubectl get pods -o
// wide` prints them. Without -n it lists every namespace and, as `kubectl
// get pods -A -o wide` does, prints NAMESPACE first; -n NAMESPACE lists
// that namespace alone, without the column.
func Pods(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pods", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", DefaultServer, serverUsage)
	namespace := fs.String("namespace", "", "only pods of this namespace (default: every namespace, as kubectl -A)")
	fs.StringVar(namespace, "n", "", "shorthand for --namespace")
	// -A is what the listing does anyway; accepted for kubectl's users.
	all := fs.Bool("all-namespaces", false, "every namespace (the default)")
	fs.BoolVar(all, "A", false, "shorthand for --all-namespaces")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "minikubelet pods: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *all && *namespace != "" {
		fmt.Fprintln(stderr, "minikubelet pods: -A and -n exclude each other")
		return 2
	}
	pods, err := newClient(*server).pods(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "minikubelet pods:", err)
		return 1
	}
	var shown []v1.Pod
	for _, p := range pods {
		if *namespace == "" || p.Namespace == *namespace {
			shown = append(shown, p)
		}
	}
	if len(shown) == 0 {
		if *namespace != "" {
			fmt.Fprintf(stderr, "No resources found in %s namespace.\n", *namespace)
		} else {
			fmt.Fprintln(stderr, "No resources found")
		}
		return 0
	}
	printPods(stdout, shown, *namespace == "", time.Now())
	return 0
}

// printPods writes the table kubectl's wide pod listing prints, with its
// tabwriter settings (cli-runtime's printers: min width 6, tab width 4,
// padding 3).
func printPods(w io.Writer, pods []v1.Pod, withNamespace bool, now time.Time) {
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	header := "NAME\tREADY\tSTATUS\tRESTARTS\tAGE\tIP\tNODE\tNOMINATED NODE\tREADINESS GATES"
	if withNamespace {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(tw, header)
	for i := range pods {
		p := &pods[i]
		s := summarize(p)
		cells := []string{
			p.Name, fmt.Sprintf("%d/%d", s.ready, s.total), s.status, s.restartsColumn(now), age(p, now),
			orNone(podIP(p)), orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName), readinessGates(p),
		}
		if withNamespace {
			cells = append([]string{p.Namespace}, cells...)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}

// podSummary is what kubectl derives from a pod's status for its READY,
// STATUS and RESTARTS columns.
type podSummary struct {
	ready, total int
	status       string
	restarts     int
	lastRestart  time.Time // when the newest counted restart's previous instance finished
}

// restartsColumn is "3", or "3 (2m ago)" when the last restart's time is
// known.
func (s podSummary) restartsColumn(now time.Time) string {
	if s.restarts == 0 || s.lastRestart.IsZero() {
		return strconv.Itoa(s.restarts)
	}
	return fmt.Sprintf("%d (%s ago)", s.restarts, duration.HumanDuration(now.Sub(s.lastRestart)))
}

// restartCounter sums restart counts and keeps the newest finish time of
// the instances they replaced.
type restartCounter struct {
	n    int
	last time.Time
}

func (c *restartCounter) add(cs *v1.ContainerStatus) {
	c.n += int(cs.RestartCount)
	if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(c.last) {
		c.last = t.FinishedAt.Time
	}
}

// summarize follows kubectl's pod printer (k8s.io/kubernetes
// pkg/printers/internalversion): STATUS is the phase (or the pod's reason),
// overridden by the first init container that has not completed
// ("Init:1/2", "Init:CrashLoopBackOff", "Init:Error") or else by the
// containers' waiting or terminated reasons, the first container winning
// ("CrashLoopBackOff", "Completed", "ExitCode:3"); "Completed" with a
// container still running reads "Running" or "NotReady"; a pod being
// deleted that has not finished is "Terminating". While init containers
// run, RESTARTS counts theirs up to the one running; afterwards it counts
// the containers' and the sidecars' (restartable init containers), which
// also count in READY.
func summarize(p *v1.Pod) podSummary {
	s := podSummary{total: len(p.Spec.Containers), status: string(p.Status.Phase)}
	if p.Status.Reason != "" {
		s.status = p.Status.Reason
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonSchedulingGated {
			s.status = v1.PodReasonSchedulingGated
		}
	}
	sidecar := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecar[c.Name] = true
			s.total++
		}
	}

	var all, sidecars restartCounter
	initializing := false
	for i := range p.Status.InitContainerStatuses {
		cs := &p.Status.InitContainerStatuses[i]
		all.add(cs)
		if sidecar[cs.Name] {
			sidecars.add(cs)
		}
		term, wait := cs.State.Terminated, cs.State.Waiting
		switch {
		case term != nil && term.ExitCode == 0:
			continue
		case sidecar[cs.Name] && cs.Started != nil && *cs.Started:
			if cs.Ready {
				s.ready++
			}
			continue
		case term != nil:
			s.status = "Init:" + terminatedReason(term)
		case wait != nil && wait.Reason != "" && wait.Reason != "PodInitializing":
			s.status = "Init:" + wait.Reason
		default:
			s.status = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}
	s.restarts, s.lastRestart = all.n, all.last

	if !initializing || conditionTrue(p, v1.PodInitialized) {
		c := sidecars
		hasRunning := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := &p.Status.ContainerStatuses[i]
			c.add(cs)
			switch term, wait := cs.State.Terminated, cs.State.Waiting; {
			case wait != nil && wait.Reason != "":
				s.status = wait.Reason
			case term != nil:
				s.status = terminatedReason(term)
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
				s.ready++
			}
		}
		s.restarts, s.lastRestart = c.n, c.last
		if s.status == "Completed" && hasRunning {
			s.status = "NotReady"
			if conditionTrue(p, v1.PodReady) {
				s.status = "Running"
			}
		}
	}

	terminal := p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
	switch {
	case p.DeletionTimestamp != nil && p.Status.Reason == "NodeLost":
		s.status = "Unknown"
	case p.DeletionTimestamp != nil && !terminal:
		s.status = "Terminating"
	}
	return s
}

// terminatedReason is a terminated container's reason, else its signal or
// exit code: "Error", "Signal:9", "ExitCode:3".
func terminatedReason(t *v1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

func conditionTrue(p *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// podStatus is the STATUS column alone.
func podStatus(p *v1.Pod) string { return summarize(p).status }

// age is the AGE column: time since creation. A static pod read from a
// file has no creationTimestamp (the kubelet's /pods shows none either, and
// kubectl would print <unknown>): its start time stands in.
func age(p *v1.Pod, now time.Time) string {
	t := p.CreationTimestamp.Time
	if t.IsZero() && p.Status.StartTime != nil {
		t = p.Status.StartTime.Time
	}
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// podIP is the first of the pod's IPs, as kubectl shows it.
func podIP(p *v1.Pod) string {
	if len(p.Status.PodIPs) > 0 {
		return p.Status.PodIPs[0].IP
	}
	return p.Status.PodIP
}

// readinessGates is "<none>", or how many of the pod's readiness gates
// have a true condition: "1/2".
func readinessGates(p *v1.Pod) string {
	if len(p.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	n := 0
	for _, g := range p.Spec.ReadinessGates {
		if conditionTrue(p, g.ConditionType) {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, len(p.Spec.ReadinessGates))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
