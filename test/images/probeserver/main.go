package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probeserver serve|check [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "check":
		err = check(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "probeserver:", err)
		os.Exit(1)
	}
}

// state is a directory of one file per key.
type state string

func (s state) get(key, def string) string {
	b, err := os.ReadFile(filepath.Join(string(s), key))
	if err != nil {
		return def
	}
	return strings.TrimSpace(string(b))
}

func (s state) set(key, value string) error {
	if key == "" || strings.ContainsAny(key, "/.") {
		return fmt.Errorf("bad key %q", key)
	}
	tmp := filepath.Join(string(s), "."+key)
	if err := os.WriteFile(tmp, []byte(value), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(string(s), key))
}

func (s state) delay() {
	if d, err := time.ParseDuration(s.get("delay", "0s")); err == nil && d > 0 {
		time.Sleep(d)
	}
}

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	dir := fs.String("state", "/tmp/probeserver", "state directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st := state(*dir)
	st.delay()
	code, err := strconv.Atoi(st.get("exec", "0"))
	if err != nil {
		return fmt.Errorf("state exec: %w", err)
	}
	fmt.Printf("exec check: exit %d\n", code)
	os.Exit(code)
	return nil
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	httpAddr := fs.String("http", ":8080", "HTTP address")
	tcpAddr := fs.String("tcp", ":8081", "TCP address")
	grpcAddr := fs.String("grpc", ":8082", "gRPC address")
	dir := fs.String("state", "/tmp/probeserver", "state directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	st := state(*dir)
	for _, kv := range fs.Args() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("argument %q is not KEY=VALUE", kv)
		}
		if err := st.set(k, v); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	hs := health.NewServer()
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, delayedHealth{Server: hs, st: st})
	tcp := &toggledListener{addr: *tcpAddr}

	apply := func() {
		status := healthpb.HealthCheckResponse_SERVING
		if st.get("grpc", "SERVING") == "NOT_SERVING" {
			status = healthpb.HealthCheckResponse_NOT_SERVING
		}
		hs.SetServingStatus("", status)
		hs.SetServingStatus("probe", status)
		tcp.set(st.get("tcp", "on") == "on")
	}
	apply()

	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		st.delay()
		if h := st.get("header", ""); h != "" {
			name, value, _ := strings.Cut(h, ":")
			if r.Header.Get(name) != value {
				http.Error(w, "missing header "+h, http.StatusForbidden)
				return
			}
		}
		code, _ := strconv.Atoi(st.get("http", "200"))
		w.WriteHeader(code)
		fmt.Fprintf(w, "healthz %d user-agent=%q\n", code, r.UserAgent())
	})
	mux.HandleFunc("/startup", func(w http.ResponseWriter, _ *http.Request) {
		code, _ := strconv.Atoi(st.get("startup", "200"))
		w.WriteHeader(code)
		fmt.Fprintf(w, "startup %d\n", code)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/set", func(w http.ResponseWriter, r *http.Request) {
		keys := make([]string, 0, len(r.URL.Query()))
		for k := range r.URL.Query() {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := st.set(k, r.URL.Query().Get(k)); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		apply()
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/state", func(w http.ResponseWriter, _ *http.Request) {
		for _, k := range []string{"http", "startup", "header", "tcp", "grpc", "exec", "delay"} {
			fmt.Fprintf(w, "%s=%s\n", k, st.get(k, ""))
		}
	})
	hsrv := &http.Server{Addr: *httpAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	errs := make(chan error, 2)
	go func() { errs <- hsrv.ListenAndServe() }()
	gl, err := net.Listen("tcp", *grpcAddr)
	if err != nil {
		return err
	}
	go func() { errs <- gs.Serve(gl) }()
	fmt.Printf("probeserver: http %s tcp %s grpc %s state %s\n", *httpAddr, *tcpAddr, *grpcAddr, *dir)
	select {
	case <-ctx.Done():
		fmt.Println("probeserver: stopping")
		gs.Stop()
		_ = hsrv.Close()
		tcp.set(false)
		return nil
	case err := <-errs:
		return err
	}
}

// delayedHealth answers health checks after the state's delay.
type delayedHealth struct {
	*health.Server
	st state
}

func (d delayedHealth) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	d.st.delay()
	return d.Server.Check(ctx, req)
}

// toggledListener accepts and closes TCP connections while it is on; when
// off, nothing listens and connections are refused.
type toggledListener struct {
	addr string
	mu   sync.Mutex
	ln   net.Listener
}

func (t *toggledListener) set(on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case on && t.ln == nil:
		ln, err := net.Listen("tcp", t.addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "probeserver: tcp listen:", err)
			return
		}
		t.ln = ln
		go func() {
			for {
				c, err := ln.Accept()
				if errors.Is(err, net.ErrClosed) {
					return
				}
				if err == nil {
					_ = c.Close()
				}
			}
		}()
	case !on && t.ln != nil:
		_ = t.ln.Close()
		t.ln = nil
	}
}
