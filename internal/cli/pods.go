package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Pods runs `minikubelet pods`: the node's pods as `kubectl get pods -o
// wide` prints them (NAME, READY, STATUS, RESTARTS, AGE, IP; NAMESPACE
// first when the pods are in more than one).
func Pods(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pods", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", DefaultServer, serverUsage)
	namespace := fs.String("namespace", "", "only pods of this namespace")
	fs.StringVar(namespace, "n", "", "shorthand for --namespace")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "minikubelet pods: unexpected argument %q\n", fs.Arg(0))
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
		fmt.Fprintln(stderr, "No resources found.")
		return 0
	}
	printPods(stdout, shown, time.Now())
	return 0
}

func printPods(w io.Writer, pods []v1.Pod, now time.Time) {
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	namespaces := map[string]bool{}
	for _, p := range pods {
		namespaces[p.Namespace] = true
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := "NAME\tREADY\tSTATUS\tRESTARTS\tAGE\tIP"
	if len(namespaces) > 1 {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(tw, header)
	for i := range pods {
		p := &pods[i]
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", p.Name, readyColumn(p), podStatus(p), restartsColumn(p, now), age(p, now), ipColumn(p))
		if len(namespaces) > 1 {
			row = p.Namespace + "\t" + row
		}
		fmt.Fprintln(tw, row)
	}
	_ = tw.Flush()
}

func readyColumn(p *v1.Pod) string {
	ready, total := 0, len(p.Spec.Containers)
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready && cs.State.Running != nil {
			ready++
		}
	}
	for i, c := range p.Spec.InitContainers {
		if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
			continue
		}
		total++ // sidecars count, as kubectl counts them
		if i < len(p.Status.InitContainerStatuses) && p.Status.InitContainerStatuses[i].Ready {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d", ready, total)
}

// restartsColumn is the sum of restarts, with how long ago the last one
// was, as kubectl prints it: "3 (2m ago)".
func restartsColumn(p *v1.Pod, now time.Time) string {
	restarts := 0
	var last time.Time
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			restarts += int(cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(last) {
				last = t.FinishedAt.Time
			}
		}
	}
	if restarts == 0 || last.IsZero() {
		return fmt.Sprint(restarts)
	}
	return fmt.Sprintf("%d (%s ago)", restarts, duration.HumanDuration(now.Sub(last)))
}

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

func ipColumn(p *v1.Pod) string {
	if p.Status.PodIP == "" {
		return "<none>"
	}
	return p.Status.PodIP
}

// podStatus is kubectl's STATUS column: the phase, overridden by what the
// init containers and then the containers are doing.
func podStatus(p *v1.Pod) string {
	reason := string(p.Status.Phase)
	if p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	initializing := false
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for i, cs := range p.Status.InitContainerStatuses {
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case sidecars[cs.Name] && cs.Started != nil && *cs.Started:
			continue
		case cs.State.Terminated != nil:
			if cs.State.Terminated.Reason != "" {
				reason = "Init:" + cs.State.Terminated.Reason
			} else if cs.State.Terminated.Signal != 0 {
				reason = fmt.Sprintf("Init:Signal:%d", cs.State.Terminated.Signal)
			} else {
				reason = fmt.Sprintf("Init:ExitCode:%d", cs.State.Terminated.ExitCode)
			}
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + cs.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing {
		hasRunning := false
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := p.Status.ContainerStatuses[i]
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				reason = cs.State.Waiting.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
				reason = cs.State.Terminated.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", cs.State.Terminated.Signal)
			case cs.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", cs.State.Terminated.ExitCode)
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
			}
		}
		if reason == "Completed" && hasRunning {
			reason = "NotReady"
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
					reason = "Running"
				}
			}
		}
	}
	if p.DeletionTimestamp != nil {
		reason = "Terminating"
	}
	return strings.TrimSpace(reason)
}
