// Command fakecri serves an in-memory CRI runtime (package
// test/scale/fakecri) on a Unix socket until SIGTERM or SIGINT, for a
// hollow node's agent:
//
//	fakecri -listen /path/cri.sock -pod-cidr 10.200.3.0/24 [-state-dir DIR]
//
// The socket is removed when it stops. It exits 2 on a bad flag, 1 when it
// cannot serve.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/test/scale/fakecri"
)

func main() {
	fs := flag.NewFlagSet("fakecri", flag.ExitOnError)
	listen := fs.String("listen", "", "the Unix socket to serve CRI on (required)")
	cidr := fs.String("pod-cidr", "10.200.0.0/24", "the IPv4 prefix sandboxes get their addresses from")
	stateDir := fs.String("state-dir", "", "the directory whose filesystem ImageFsInfo reports (default: the socket's)")
	klog.InitFlags(fs)
	_ = fs.Parse(os.Args[1:])
	prefix, err := netip.ParsePrefix(*cidr)
	if err != nil || *listen == "" {
		fmt.Fprintf(os.Stderr, "fakecri: -listen is required and -pod-cidr must be a prefix (%v)\n", err)
		os.Exit(2)
	}
	if *stateDir == "" {
		*stateDir = filepath.Dir(*listen)
	}
	s, err := fakecri.New(fakecri.Config{PodCIDR: prefix, StateDir: *stateDir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := s.Serve(ctx, *listen); err != nil {
		klog.ErrorS(err, "fakecri failed")
		stop()
		os.Exit(1)
	}
}
