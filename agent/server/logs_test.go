package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/containerlogs"
)

// fakeLogs serves one container's log file.
type fakeLogs struct {
	path     string
	previous string
	running  atomic.Bool
}

func (f *fakeLogs) ContainerLog(ns, pod, container string, previous bool) (LogFile, error) {
	if ns != "default" || pod != "web" || container != "app" {
		return LogFile{}, fmt.Errorf("container %q of pod %s/%s: %w", container, ns, pod, ErrNotFound)
	}
	if previous {
		return LogFile{Path: f.previous, Running: func() bool { return false }}, nil
	}
	return LogFile{Path: f.path, Running: f.running.Load}, nil
}

const criLog = `2026-11-21T10:00:00.000000001Z stdout F one
2026-11-21T10:00:01.000000000Z stderr P tw
2026-11-21T10:00:01.500000000Z stderr F o
2026-11-21T10:00:02.000000000Z stdout F three
`

// logNow is the log server's fake time: 1.2s after the log's first line.
var logNow = time.Date(2026, 11, 21, 10, 0, 1, 200_000_000, time.UTC)

func logServer(t *testing.T) (*httptest.Server, *fakeLogs, *testingclock.FakeClock) {
	t.Helper()
	dir := t.TempDir()
	f := &fakeLogs{path: filepath.Join(dir, "0.log"), previous: filepath.Join(dir, "prev.log")}
	if err := os.WriteFile(f.path, []byte(criLog), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.previous, []byte("2026-11-21T09:00:00Z stdout F before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(logNow)
	s := &Server{cfg: Config{Logs: f, Clock: clk, SplitLogStreams: true}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.containerLog)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, f, clk
}

func getLog(t *testing.T, srv *httptest.Server, path string) (string, int) {
	t.Helper()
	resp, err := http.Get(srv.URL + path) //nolint:noctx // test
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode
}

func TestContainerLogs(t *testing.T) {
	srv, _, _ := logServer(t)
	tests := []struct {
		query string
		want  string
		code  int
	}{
		{"", "one\ntwo\nthree\n", 200},
		{"?tailLines=1", "three\n", 200},
		{"?tailLines=2", "two\nthree\n", 200}, // a line split into partial entries is one line
		{"?tailLines=0", "", 200},
		{"?tail=1", "three\n", 200}, // the old name
		{"?tail=all", "one\ntwo\nthree\n", 200},
		{"?timestamps=true&tailLines=1", "2026-11-21T10:00:02.000000000Z three\n", 200},
		{"?timestamps=false", "one\ntwo\nthree\n", 200},
		{"?timestamps", "2026-11-21T10:00:00.000000001Z one\n2026-11-21T10:00:01.000000000Z two\n2026-11-21T10:00:02.000000000Z three\n", 200},
		{"?sinceTime=2026-11-21T10:00:01Z", "two\nthree\n", 200},
		{"?sinceSeconds=1", "two\nthree\n", 200}, // since 10:00:00.2 by the server's clock
		{"?sinceSeconds=2", "one\ntwo\nthree\n", 200},
		{"?limitBytes=5", "one\nt", 200},
		{"?previous=true", "before\n", 200},
		{"?previous=0", "one\ntwo\nthree\n", 200},
		{"?stream=Stdout", "one\nthree\n", 200},
		{"?stream=Stderr", "two\n", 200},
		{"?stream=All&tailLines=1", "three\n", 200},
		{"?insecureSkipTLSVerifyBackend=true&container=x", "one\ntwo\nthree\n", 200},
		{"?tailLines=x", "query parameter tailLines", 400},
		{"?sinceTime=yesterday", "query parameter sinceTime", 400},
		{"?tailLines=-1", "tailLines: must be greater than or equal to 0", 422},
		{"?limitBytes=0", "limitBytes: must be greater than 0", 422},
		{"?sinceSeconds=0", "sinceSeconds: must be greater than 0", 422},
		{"?sinceSeconds=1&sinceTime=2026-11-21T10:00:01Z", "at most one of sinceTime or sinceSeconds", 422},
		{"?stream=Stdout&tailLines=1", "mutually exclusive", 422},
		{"?stream=stdout", "not one of All, Stdout, Stderr", 422},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got, code := getLog(t, srv, "/containerLogs/default/web/app"+tt.query)
			if code != tt.code || (code == 200 && got != tt.want) || (code != 200 && !strings.Contains(got, tt.want)) {
				t.Fatalf("HTTP %d %q; want %d %q", code, got, tt.code, tt.want)
			}
		})
	}
	if got, code := getLog(t, srv, "/containerLogs/default/web/nope"); code != http.StatusNotFound || !strings.Contains(got, `"nope"`) {
		t.Errorf("unknown container: HTTP %d %q", code, got)
	}
}

// Without the PodLogsQuerySplitStreams gate a stream other than All is
// refused, as the kubelet refuses it.
func TestContainerLogsStreamNeedsGate(t *testing.T) {
	srv, _, _ := logServer(t)
	srv.Config.Handler.(*http.ServeMux).HandleFunc("GET /nogate/{namespace}/{pod}/{container}", (&Server{cfg: Config{Logs: &fakeLogs{}, Clock: testingclock.NewFakeClock(logNow)}}).containerLog)
	if got, code := getLog(t, srv, "/nogate/default/web/app?stream=Stderr"); code != http.StatusBadRequest || !strings.Contains(got, "PodLogsQuerySplitStreams") {
		t.Errorf("HTTP %d %q", code, got)
	}
}

// A log file that is gone is a 400 naming the container, before any
// output.
func TestContainerLogsMissingFile(t *testing.T) {
	srv, f, _ := logServer(t)
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
	if got, code := getLog(t, srv, "/containerLogs/default/web/app"); code != http.StatusBadRequest || !strings.Contains(got, `"app"`) {
		t.Errorf("HTTP %d %q", code, got)
	}
}

// A follow reads what is appended (across a rotation) each time the
// server's clock passes followPoll, and ends once the container stops.
func TestContainerLogsFollow(t *testing.T) {
	srv, f, clk := logServer(t)
	f.running.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/containerLogs/default/web/app?follow=true&tailLines=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	read := make(chan string, 16)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(b)
			if n > 0 {
				read <- string(b[:n])
			}
			if err != nil {
				close(read)
				return
			}
		}
	}()
	var got strings.Builder
	// step lets the follower look again once it waits on the clock.
	step := func() {
		if clk.HasWaiters() {
			clk.Step(containerlogs.FollowPoll)
		}
	}
	expect := func(want string) {
		t.Helper()
		for !strings.HasSuffix(got.String(), want) {
			select {
			case s, ok := <-read:
				if !ok {
					t.Fatalf("stream ended with %q; want %q", got.String(), want)
				}
				got.WriteString(s)
			case <-time.After(time.Millisecond):
				step()
			case <-ctx.Done():
				t.Fatalf("got %q; want it to end with %q", got.String(), want)
			}
		}
	}
	expect("three\n")
	appendLine := func(path, line string) {
		fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(fh, line)
		fh.Close()
	}
	appendLine(f.path, "2026-11-21T10:00:03Z stdout P fo")
	appendLine(f.path, "2026-11-21T10:00:03Z stdout F ur")
	expect("three\nfour\n")
	// Rotation: the file is renamed away and a new one takes its path.
	appendLine(f.path, "2026-11-21T10:00:04Z stdout F five")
	if err := os.Rename(f.path, f.path+".20261121-100004"); err != nil {
		t.Fatal(err)
	}
	appendLine(f.path, "2026-11-21T10:00:05Z stdout F six")
	expect("four\nfive\nsix\n")
	// The container stops: the stream ends.
	f.running.Store(false)
	for ended := false; !ended; {
		select {
		case _, ok := <-read:
			ended = !ok
		case <-time.After(time.Millisecond):
			step()
		case <-ctx.Done():
			t.Fatal("the stream did not end after the container stopped")
		}
	}
	if !strings.HasSuffix(got.String(), "six\n") {
		t.Errorf("stream %q", got.String())
	}
}
