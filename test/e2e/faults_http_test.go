package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// Answers of a flappingServer.
const (
	answerGood      = "good"      // 200 with the body
	answerError     = "500"       // 500 Internal Server Error
	answerHang      = "hang"      // no answer until the client gives up
	answerTruncated = "truncated" // half the body, then the connection cut
	answerGarbage   = "garbage"   // 200 with random bytes
	answerBadPod    = "badpod"    // 200 with a pod list whose pod has no image
	answerEmpty     = "empty"     // 200 with an empty body
	answerFlap      = "flap"      // any of the above but a hang, at random
)

var flapAnswers = []string{answerGood, answerError, answerTruncated, answerGarbage, answerBadPod, answerEmpty}

// flappingServer is a real HTTP server for --manifest-url whose answer the
// test sets.
type flappingServer struct {
	*httptest.Server
	// quit ends the hanging answers when the test ends.
	quit chan struct{}

	mu     sync.Mutex
	answer string
	body   string
	// changed is closed when the answer changes: a hanging answer then
	// ends (the connection cut).
	changed chan struct{}
	rng     *rand.Rand
	served  map[string]int
}

func newFlappingServer(t *testing.T, seed uint64) *flappingServer {
	s := &flappingServer{quit: make(chan struct{}), answer: answerGood, changed: make(chan struct{}), rng: rand.New(rand.NewPCG(seed, 12)), served: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.quit) }) // runs first: no answer hangs the Close
	return s
}

func (s *flappingServer) set(answer, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = answer
	if body != "" {
		s.body = body
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *flappingServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	answer, body, changed := s.answer, s.body, s.changed
	if answer == answerFlap {
		answer = flapAnswers[s.rng.IntN(len(flapAnswers))]
	}
	s.served[answer]++
	garbage := make([]byte, 512)
	for i := range garbage {
		garbage[i] = byte(s.rng.IntN(256))
	}
	s.mu.Unlock()
	switch answer {
	case answerGood:
		_, _ = w.Write([]byte(body))
	case answerError:
		http.Error(w, "internal error", http.StatusInternalServerError)
	case answerHang:
		select {
		case <-r.Context().Done():
		case <-s.quit:
		case <-changed:
			panic(http.ErrAbortHandler) // cut the connection
		}
	case answerTruncated:
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write([]byte(body[:len(body)/2]))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler) // cut the connection, silently
	case answerGarbage:
		_, _ = w.Write(garbage)
	case answerEmpty:
		w.WriteHeader(http.StatusOK)
	case answerBadPod:
		_, _ = w.Write([]byte("apiVersion: v1\nkind: PodList\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: web}\n  spec:\n    containers:\n    - name: main\n"))
	}
}

func (s *flappingServer) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.served {
		out[k] = v
	}
	return out
}

// httpError returns the error /manifests/errors reports for the HTTP
// source, "" for none.
func (a *agent) httpError() string {
	for _, e := range a.manifestErrors() {
		if e["source"] == "http" {
			return e["error"]
		}
	}
	return ""
}

// The manifest URL flapping: a real local server answers by turns with the
// good pod list, a server error, no answer at all (the agent's client
// gives up after 10s), a body cut short, random bytes, a pod list that
// does not validate and an empty body (to remove every pod, a server
// serves an empty PodList; an empty body is refused), each until the agent reports it on /manifests/errors
// (and back to good until the error is gone), then at random on every
// request for a while (short form: 5s; full: 30s), polled every 200ms.
// Throughout, the last good set keeps running: no container is restarted,
// added or removed (the runtime is sampled every 100ms). Then a new good
// set is applied: a pod edited (its container restarted with the new
// spec), one removed, one added, and the error is gone.
func TestFaultHTTPSourceFlapping(t *testing.T) {
	scale := faults(t)
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		srv := newFlappingServer(t, uint64(time.Now().UnixNano()))
		srv.set(answerGood, podList(revisionPod("web", 1), revisionPod("db", 1)))
		a := startAgent(t, rt, "--manifest-url", srv.URL+"/pods.yaml", "--http-check-frequency", "200ms")
		ctx := context.Background()
		first := map[string]string{"web": "1", "db": "1"}
		polltest.Until(t, time.Minute, "the URL's pods running", func() (bool, string) { return a.convergedTo(ctx, first, "main") })
		ids := a.runningIDs(ctx, "web", "db")
		records := a.podContainers("web", "db")

		// Sample the runtime for the rest of the flapping: the running
		// containers of the node must stay those.
		var (
			mu      sync.Mutex
			changes []string
		)
		sctx, stop := context.WithCancel(ctx)
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for sctx.Err() == nil {
				_, containers, err := runtimePods(sctx, rt, a.node)
				if err == nil {
					var now []string
					for _, c := range containers {
						if c.State.String() == "CONTAINER_RUNNING" {
							now = append(now, c.Id)
						}
					}
					slices.Sort(now)
					if !slices.Equal(now, ids) {
						mu.Lock()
						changes = append(changes, fmt.Sprintf("%s: running %v", time.Now().Format("15:04:05.000"), now))
						mu.Unlock()
					}
				}
				select {
				case <-sctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		defer func() { stop(); <-sampled }()

		faults := []struct {
			answer, reason string
			within         time.Duration
		}{
			{answerError, "500", 10 * time.Second},
			{answerHang, "Timeout", 30 * time.Second},
			{answerTruncated, "unexpected EOF", 10 * time.Second},
			{answerGarbage, "body rejected", 10 * time.Second},
			{answerBadPod, "image", 10 * time.Second},
			{answerEmpty, "empty", 10 * time.Second},
		}
		for _, f := range faults {
			t0 := time.Now()
			srv.set(f.answer, "")
			polltest.Until(t, f.within, "the "+f.answer+" answer reported", func() (bool, string) {
				e := a.httpError()
				return strings.Contains(e, f.reason), fmt.Sprintf("http error %q, want one naming %q", e, f.reason)
			})
			t.Logf("%s: reported after %v: %s", f.answer, time.Since(t0).Round(time.Millisecond), a.httpError())
			t0 = time.Now()
			srv.set(answerGood, "")
			polltest.Until(t, 10*time.Second, "the error gone once the URL answers well again", func() (bool, string) {
				e := a.httpError()
				return e == "", e
			})
			t.Logf("good again: error gone after %v", time.Since(t0).Round(time.Millisecond))
		}
		srv.set(answerFlap, "")
		flapEnd := time.Now().Add(scale.flapFor)
		for time.Now().Before(flapEnd) {
			if !a.alive() {
				t.Fatal("the agent exited")
			}
			time.Sleep(100 * time.Millisecond) // pacing only: the sampler checks
		}
		srv.set(answerGood, "")
		polltest.Until(t, 10*time.Second, "the error gone after the flapping", func() (bool, string) {
			e := a.httpError()
			return e == "", e
		})
		stop()
		<-sampled
		mu.Lock()
		for _, c := range changes {
			t.Errorf("the running containers changed while the URL flapped (were %v): %s", ids, c)
		}
		mu.Unlock()
		if after := a.podContainers("web", "db"); fmt.Sprint(after) != fmt.Sprint(records) {
			t.Errorf("containers on /pods changed while the URL flapped:\nbefore %v\nafter  %v", records, after)
		}
		t.Logf("answers served: %v", srv.counts())

		// A new good set: web edited, db gone, cache new.
		srv.set(answerGood, podList(revisionPod("web", 2), revisionPod("cache", 1)))
		second := map[string]string{"web": "2", "cache": "1"}
		polltest.Until(t, time.Minute, "the new good set applied", func() (bool, string) { return a.convergedTo(ctx, second, "main") })
		if e := a.httpError(); e != "" {
			t.Errorf("/manifests/errors still reports %q", e)
		}
	})
}
