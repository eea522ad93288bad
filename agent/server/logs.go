package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/containerlogs"
)

// ErrNotFound marks a pod or container that the node does not have; the
// server answers 404 with the error's text.
var ErrNotFound = errors.New("not found")

// LogFile is where a container's log is and whether the container still
// writes to it.
type LogFile struct {
	Path string
	// Running reports whether the container still runs; a follow ends at
	// the end of the file once it does not.
	Running func() bool
}

// containerLogs finds containers' CRI log files.
type containerLogs interface {
	// ContainerLog returns the log file of the newest instance of a
	// container of a pod, or of the one before it when previous is set.
	// Unknown pods and containers are errors wrapping ErrNotFound.
	ContainerLog(namespace, pod, container string, previous bool) (LogFile, error)
}

// The values of the stream query parameter (v1.LogStreamStdout, ...).
const (
	streamAll    = "All"
	streamStdout = "Stdout"
	streamStderr = "Stderr"
)

// logQuery is what a /containerLogs query asks for.
type logQuery struct {
	opts     containerlogs.ReadOptions
	previous bool
	// stream is All, Stdout or Stderr.
	stream string
}

// errInvalidQuery marks a query that decodes but is refused by the
// kubelet's validation of PodLogOptions (422); other query errors are
// 400s.
var errInvalidQuery = errors.New("invalid request")

// parseLogQuery reads the query as the kubelet decodes a v1.PodLogOptions
// from it, and validates it as the kubelet does. now is when sinceSeconds
// counts back from. A bool parameter is true unless it is "0" or "false"
// (so "?follow" follows); the old "tail" parameter stands for tailLines
// ("all": every line); insecureSkipTLSVerifyBackend and container are
// the apiserver's and are ignored. stream (Stdout, Stderr, All) needs
// splitStreams, the kubelet's PodLogsQuerySplitStreams feature gate.
func parseLogQuery(q url.Values, now time.Time, splitStreams bool) (logQuery, error) {
	if tail := q.Get("tail"); tail != "" {
		q = cloneValues(q)
		q.Set("tailLines", tail)
		if tail == "all" {
			q.Del("tailLines")
		}
	}
	boolean := func(name string) bool {
		v, ok := q[name]
		return ok && len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
	}
	var errs []error
	integer := func(name string) *int64 {
		s := q.Get(name)
		if s == "" {
			return nil
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("query parameter %s: %q is not an integer", name, s))
			return nil
		}
		return &v
	}
	out := logQuery{
		opts: containerlogs.ReadOptions{
			Follow:     boolean("follow"),
			Timestamps: boolean("timestamps"),
			TailLines:  -1,
		},
		previous: boolean("previous"),
		stream:   q.Get("stream"),
	}
	tail, limit, sinceSeconds := integer("tailLines"), integer("limitBytes"), integer("sinceSeconds")
	var sinceTime time.Time
	if s := q.Get("sinceTime"); s != "" && s != "null" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("query parameter sinceTime: %q is not an RFC 3339 time", s))
		}
		sinceTime = t
	}
	if err := errors.Join(errs...); err != nil {
		return logQuery{}, err
	}

	// The kubelet's ValidatePodLogOptions.
	switch {
	case tail != nil && *tail < 0:
		errs = append(errs, errors.New("tailLines: must be greater than or equal to 0"))
	case limit != nil && *limit < 1:
		errs = append(errs, errors.New("limitBytes: must be greater than 0"))
	case sinceSeconds != nil && !sinceTime.IsZero():
		errs = append(errs, errors.New("at most one of sinceTime or sinceSeconds may be specified"))
	case sinceSeconds != nil && *sinceSeconds < 1:
		errs = append(errs, errors.New("sinceSeconds: must be greater than 0"))
	}
	switch out.stream {
	case "":
		out.stream = streamAll
	case streamAll, streamStdout, streamStderr:
		if tail != nil && out.stream != streamAll {
			errs = append(errs, errors.New("tailLines and a specific stream are mutually exclusive for now"))
		}
	default:
		errs = append(errs, fmt.Errorf("stream: %q is not one of All, Stdout, Stderr", out.stream))
	}
	if err := errors.Join(errs...); err != nil {
		return logQuery{}, fmt.Errorf("%w: %w", errInvalidQuery, err)
	}
	if out.stream != streamAll && !splitStreams {
		return logQuery{}, fmt.Errorf("unable to return the given log stream: %q; enable the PodLogsQuerySplitStreams feature gate", out.stream)
	}
	if tail != nil {
		out.opts.TailLines = *tail
	}
	if limit != nil {
		out.opts.LimitBytes = *limit
	}
	if sinceSeconds != nil {
		out.opts.Since = now.Add(-time.Duration(*sinceSeconds) * time.Second)
	}
	if !sinceTime.IsZero() {
		out.opts.Since = sinceTime
	}
	return out, nil
}

func cloneValues(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = v
	}
	return out
}

// containerLog serves GET /containerLogs/{namespace}/{pod}/{container}
// as the kubelet does: the container's output decoded from its CRI log
// file (agent/containerlogs.Read), with every query parameter of
// v1.PodLogOptions. A pod or container the node does not have is a 404;
// a query that does not decode a 400, one that fails validation a 422; a
// container that has no log to show (waiting to start, no previous
// instance) a 400 that says why.
func (s *Server) containerLog(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Logs == nil {
		http.Error(w, "container logs are not served", http.StatusNotFound)
		return
	}
	q, err := parseLogQuery(r.URL.Query(), s.cfg.Clock.Now(), s.cfg.SplitLogStreams)
	switch {
	case errors.Is(err, errInvalidQuery):
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	container := r.PathValue("container")
	lf, err := s.cfg.Logs.ContainerLog(r.PathValue("namespace"), r.PathValue("pod"), container, q.previous)
	switch {
	case errors.Is(err, ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if _, err := os.Stat(lf.Path); err != nil {
		http.Error(w, fmt.Sprintf("log of container %q: %v", container, err), http.StatusBadRequest)
		return
	}
	out := newLogResponse(w)
	if q.opts.Follow {
		// A follower gets the status at once, not with the first line.
		out.start()
		_ = out.Flush()
	}
	sinks := containerlogs.Sinks{Stdout: out, Stderr: out, Flush: out.Flush}
	switch q.stream {
	case streamStdout:
		sinks.Stderr = nil
	case streamStderr:
		sinks.Stdout = nil
	}
	err = containerlogs.Read(r.Context(), s.cfg.Clock, containerlogs.Source(lf), q.opts, sinks)
	switch {
	case err == nil || r.Context().Err() != nil:
	case !out.started:
		http.Error(w, fmt.Sprintf("log of container %q: %v", container, err), http.StatusBadRequest)
	default:
		// The status line is sent: the client sees a short read.
		klog.FromContext(r.Context()).Info("Reading a container log failed", "container", container, "path", lf.Path, "err", err)
	}
}

// logResponse writes the log to the client through a buffer of its own,
// which Flush (called whenever the read catches up with the file) passes
// on, so that a follower sees lines as they come. The headers go with the
// first write, so that an error before it can still be an error status.
type logResponse struct {
	w       http.ResponseWriter
	buf     *bufio.Writer
	started bool
}

var _ io.Writer = (*logResponse)(nil)

func newLogResponse(w http.ResponseWriter) *logResponse {
	return &logResponse{w: w, buf: bufio.NewWriterSize(w, 32<<10)}
}

func (l *logResponse) start() {
	if !l.started {
		l.started = true
		l.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		l.w.WriteHeader(http.StatusOK)
	}
}

func (l *logResponse) Write(p []byte) (int, error) {
	l.start()
	return l.buf.Write(p)
}

// Flush sends what is buffered to the client.
func (l *logResponse) Flush() error {
	if err := l.buf.Flush(); err != nil {
		return err
	}
	if l.started {
		if fl, ok := l.w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	return nil
}
