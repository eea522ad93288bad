package cli

import (
	"context"
	"flag"
	"fmt"
	"slices"
)

// execUsage is exec's synopsis.
const execUsage = "usage: minikubelet exec POD [-c CONTAINER] [-n NAMESPACE] [-i] [-t] [--server URL] -- COMMAND [ARG...]"

// Exec runs `minikubelet exec POD [-c C] [-i] [-t] -- CMD...`: the
// command in a running container of the node, with stdin (-i) and a
// terminal (-t, with -i on a terminal: raw mode, resized with the
// window), as kubectl exec runs it. It returns the remote command's exit
// code. POD is a pod's name, or a static pod's without its "-<node>"
// suffix.
func Exec(ctx context.Context, args []string, s Streams) int {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(s.Err)
	var f streamFlags
	f.add(fs)
	before, command := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		before, command = args[:i], args[i+1:]
	}
	positional, err := parseInterspersed(fs, before)
	if err != nil {
		return 2
	}
	switch {
	case len(positional) == 0:
		fmt.Fprintln(s.Err, execUsage)
		return 2
	case len(positional) > 1:
		fmt.Fprintf(s.Err, "minikubelet exec: unexpected argument %q: the command goes after \"--\"\n%s\n", positional[1], execUsage)
		return 2
	case len(command) == 0:
		fmt.Fprintf(s.Err, "minikubelet exec: no command: give it after \"--\"\n%s\n", execUsage)
		return 2
	}
	a, err := dialAgent(f.server)
	if err != nil {
		fmt.Fprintln(s.Err, "minikubelet exec:", err)
		return 2
	}
	namespace, pod, container, _, err := a.target(ctx, positional[0], f, s.Err)
	if err != nil {
		fmt.Fprintln(s.Err, "minikubelet exec:", err)
		return 1
	}
	tty, note := useTTY(f.tty, f.stdin, s)
	if note != "" {
		fmt.Fprintln(s.Err, note)
	}
	q := streamQuery(f.stdin, tty)
	for _, c := range command {
		q.Add("command", c)
	}
	return a.run(ctx, session{path: streamPath("exec", namespace, pod, container), query: q, stdin: f.stdin, tty: tty}, s, "exec")
}
