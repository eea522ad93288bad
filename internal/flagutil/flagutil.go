package flagutil

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"k8s.io/klog/v2"
)

// AddKlogFlags registers klog's -v and -vmodule on fs and leaves klog's
// other flags (log files, headers) out: minikubelet logs to stderr, which
// systemd's journal collects.
func AddKlogFlags(fs *flag.FlagSet) {
	all := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(all)
	for _, name := range []string{"v", "vmodule"} {
		if f := all.Lookup(name); f != nil {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	}
}

// PrintDefaults writes fs's flags to w as the kubelet's help shows them:
// --name type, then the usage and the default.
func PrintDefaults(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		line := "  " + dash + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintln(w, line)
		usage = strings.ReplaceAll(usage, "\n", "\n      ")
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "[]" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "      %s\n", usage)
	})
}
