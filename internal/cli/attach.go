package cli

import (
	"context"
	"flag"
	"fmt"
)

// attachUsage is attach's synopsis.
const attachUsage = "usage: minikubelet attach POD [-c CONTAINER] [-n NAMESPACE] [-i] [-t] [--server URL]"

// Attach runs `minikubelet attach POD [-c C] [-i] [-t]`: the output of a
// running container's main process, and with -i its stdin, as kubectl
// attach shows them. A terminal (-t) is the container's own, so only a
// container with tty: true has one; and stdin reaches only a container
// with stdin: true. It returns 0 when the session ends.
func Attach(ctx context.Context, args []string, s Streams) int {
	fs := flag.NewFlagSet("attach", flag.ContinueOnError)
	fs.SetOutput(s.Err)
	var f streamFlags
	f.add(fs)
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(positional) != 1 {
		fmt.Fprintln(s.Err, attachUsage)
		return 2
	}
	a, err := dialAgent(f.server)
	if err != nil {
		fmt.Fprintln(s.Err, "minikubelet attach:", err)
		return 2
	}
	namespace, pod, container, spec, err := a.target(ctx, positional[0], f, s.Err)
	if err != nil {
		fmt.Fprintln(s.Err, "minikubelet attach:", err)
		return 1
	}
	if spec == nil {
		fmt.Fprintf(s.Err, "minikubelet attach: container %q is not valid for pod %s/%s\n", container, namespace, pod)
		return 1
	}
	if f.stdin && !spec.Stdin {
		fmt.Fprintf(s.Err, "minikubelet attach: container %q of pod %s/%s does not read stdin (its spec has no stdin: true)\n", container, namespace, pod)
		return 1
	}
	// The terminal is the container's, as kubectl attach decides it.
	wantTTY := spec.TTY
	if f.tty && !spec.TTY {
		fmt.Fprintf(s.Err, "Unable to use a TTY - container %s did not allocate one\n", container)
	}
	tty, note := useTTY(wantTTY, f.stdin, s)
	if note != "" {
		fmt.Fprintln(s.Err, note)
	}
	if tty {
		fmt.Fprintln(s.Err, "If you don't see a command prompt, try pressing enter.")
	}
	return a.run(ctx, session{path: streamPath("attach", namespace, pod, container), query: streamQuery(f.stdin, tty), stdin: f.stdin, tty: tty}, s, "attach")
}
