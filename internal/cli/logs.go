package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// defaultContainerAnnotation names the container kubectl picks when none
// is given.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// Logs runs `minikubelet logs POD [-c CONTAINER] [-f] [--previous]`: a
// container's output, from the agent's /containerLogs. POD is a pod's name,
// or a static pod's name without its "-<node>" suffix.
func Logs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("logs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", DefaultServer, serverUsage)
	namespace := fs.String("namespace", "", "the pod's namespace (default: wherever the pod is)")
	fs.StringVar(namespace, "n", "", "shorthand for --namespace")
	container := fs.String("container", "", "the container (default: the pod's default container, else its first)")
	fs.StringVar(container, "c", "", "shorthand for --container")
	follow := fs.Bool("follow", false, "stream the log while the container runs")
	fs.BoolVar(follow, "f", false, "shorthand for --follow")
	previous := fs.Bool("previous", false, "the log of the container's previous instance")
	fs.BoolVar(previous, "p", false, "shorthand for --previous")
	tail := fs.Int("tail", -1, "only the last N lines")
	timestamps := fs.Bool("timestamps", false, "prefix each line with its time")
	// Flags may come after the pod's name, as with kubectl.
	var positional []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(positional) != 1 {
		fmt.Fprintln(stderr, "usage: minikubelet logs POD [-c CONTAINER] [-f] [--previous] [--tail N] [--timestamps]")
		return 2
	}
	c := newClient(*server)
	pods, err := c.pods(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "minikubelet logs:", err)
		return 1
	}
	pod, err := findPod(pods, positional[0], *namespace)
	if err != nil {
		fmt.Fprintln(stderr, "minikubelet logs:", err)
		return 1
	}
	name := *container
	if name == "" {
		var note string
		name, note = defaultContainer(pod)
		if note != "" {
			fmt.Fprintln(stderr, note)
		}
	}
	q := url.Values{}
	if *follow {
		q.Set("follow", "true")
	}
	if *previous {
		q.Set("previous", "true")
	}
	if *tail >= 0 {
		q.Set("tailLines", strconv.Itoa(*tail))
	}
	if *timestamps {
		q.Set("timestamps", "true")
	}
	body, err := c.get(ctx, "/containerLogs/"+url.PathEscape(pod.Namespace)+"/"+url.PathEscape(pod.Name)+"/"+url.PathEscape(name), q)
	if err != nil {
		fmt.Fprintln(stderr, "minikubelet logs:", err)
		return 1
	}
	defer body.Close()
	if _, err := io.Copy(stdout, body); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "minikubelet logs:", err)
		return 1
	}
	return 0
}

// findPod finds the pod called name (in namespace, if given), or the
// static pod whose name is name plus its node's suffix.
func findPod(pods []v1.Pod, name, namespace string) (*v1.Pod, error) {
	var exact, static []*v1.Pod
	for i := range pods {
		p := &pods[i]
		if namespace != "" && p.Namespace != namespace {
			continue
		}
		switch {
		case p.Name == name:
			exact = append(exact, p)
		case strings.HasPrefix(p.Name, name+"-") && p.Spec.NodeName != "" && p.Name == name+"-"+strings.ToLower(p.Spec.NodeName):
			static = append(static, p)
		}
	}
	for _, found := range [][]*v1.Pod{exact, static} {
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0], nil
		default:
			var where []string
			for _, p := range found {
				where = append(where, p.Namespace+"/"+p.Name)
			}
			sort.Strings(where)
			return nil, fmt.Errorf("pod %q is in more than one namespace (%s): choose one with -n", name, strings.Join(where, ", "))
		}
	}
	if namespace != "" {
		return nil, fmt.Errorf("pod %q not found in namespace %q", name, namespace)
	}
	return nil, fmt.Errorf("pod %q not found (minikubelet pods lists them)", name)
}

// defaultContainer is the container kubectl logs would show, and the note
// it prints when it had to choose.
func defaultContainer(p *v1.Pod) (string, string) {
	if c := p.Annotations[defaultContainerAnnotation]; c != "" {
		return c, ""
	}
	if len(p.Spec.Containers) == 0 {
		return "", ""
	}
	first := p.Spec.Containers[0].Name
	if len(p.Spec.Containers) == 1 {
		return first, ""
	}
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return first, fmt.Sprintf("Defaulted container %q out of: %s", first, strings.Join(names, ", "))
}
