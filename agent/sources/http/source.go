package http

import (
	"context"
	"errors"
	"fmt"
	nethttp "net/http"
	"net/url"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/sources"
)

// DefaultCheckFrequency is the poll period when Config.CheckFrequency is
// zero; it matches the kubelet's httpCheckFrequency.
const DefaultCheckFrequency = 20 * time.Second

// DefaultTimeout bounds one fetch, body included, of the client New makes
// when Config.Client is nil; it matches the kubelet's.
const DefaultTimeout = 10 * time.Second

// Config configures a Source.
type Config struct {
	// URL is the manifest URL, http or https (--manifest-url).
	URL string
	// Header is sent with every request (--manifest-url-header); nil for
	// none. New copies it.
	Header nethttp.Header
	// CheckFrequency is the poll period; DefaultCheckFrequency when zero.
	CheckFrequency time.Duration
	// NodeName is this node's name, as the pods' static identity needs it.
	NodeName string
	// Clock is the source of time; the real clock when nil.
	Clock clock.WithTicker
	// Client fetches the URL; when nil, a client with DefaultTimeout and
	// the default transport (system CAs, proxy from the environment).
	Client *nethttp.Client
}

// Source is the manifest URL source. It holds only its configuration: all
// state of a run lives in Run, so a Source is safe to share.
type Source struct {
	url            string
	origin         string // the URL without its password, as reported and hashed
	header         nethttp.Header
	checkFrequency time.Duration
	nodeName       string
	clock          clock.WithTicker
	client         *nethttp.Client
}

// New checks cfg and returns a Source for it. It rejects a URL that is not
// an absolute http or https URL with a host, and an empty node name.
func New(cfg Config) (*Source, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("--manifest-url %q: %w", cfg.URL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--manifest-url %q: must be an http:// or https:// URL with a host, such as https://config.example/pods.yaml", u.Redacted())
	}
	if cfg.NodeName == "" {
		return nil, errors.New("manifest URL source: the node name is empty: the static identity of its pods needs it")
	}
	s := &Source{
		url:            cfg.URL,
		origin:         u.Redacted(),
		header:         cfg.Header.Clone(),
		checkFrequency: cfg.CheckFrequency,
		nodeName:       cfg.NodeName,
		clock:          cfg.Clock,
		client:         cfg.Client,
	}
	if s.checkFrequency <= 0 {
		s.checkFrequency = DefaultCheckFrequency
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	if s.client == nil {
		s.client = &nethttp.Client{Timeout: DefaultTimeout}
	}
	return s, nil
}

// Run polls the URL and sends snapshots to out until ctx is done. The first
// snapshot is sent right after the first fetch. A send blocks until out
// takes it, but never stalls the polling, and a fetch never holds up a
// send: a fetch runs on a goroutine of its own (one at a time: a tick
// while one is under way is skipped), so that the snapshot of the last one
// goes out while the next one waits for a URL that does not answer (up to
// the client's timeout); while out is not ready, the snapshot waiting to
// be sent is replaced by the newest one. A fetch under way when ctx is
// done is cancelled, and Run returns once it has ended. Run neither owns
// nor closes out. Call Run once per Source at a time; two concurrent runs
// would each send their own snapshots.
func (s *Source) Run(ctx context.Context, out chan<- sources.Update) {
	logger := klog.FromContext(ctx).WithValues("source", sources.HTTP, "url", s.origin)
	r := &run{s: s, logger: logger}

	ticker := s.clock.NewTicker(s.checkFrequency)
	defer ticker.Stop()

	// fetched carries the result of the fetch under way. Buffered (1): the
	// fetching goroutine, its only writer, never blocks on it, so it ends
	// with its fetch; read by this loop; never closed.
	fetched := make(chan fetchResult, 1)
	inFlight := false
	startFetch := func() {
		inFlight = true
		seen := s.clock.Now()
		go func() {
			data, err := r.fetch(ctx)
			fetched <- fetchResult{data: data, err: err, seen: seen}
		}()
	}
	startFetch()
	for {
		// A nil channel disables the send when nothing waits to be sent.
		var (
			sendC   chan<- sources.Update
			pending sources.Update
		)
		if u, ok := r.outbox.Pending(); ok {
			sendC, pending = out, u
		}
		select {
		case <-ctx.Done():
			if inFlight {
				<-fetched // the fetch is cancelled with ctx
			}
			return
		case res := <-fetched:
			inFlight = false
			r.judgeFetch(ctx, res)
		case sendC <- pending:
			r.outbox.Sent()
		case <-ticker.C():
			if !inFlight {
				startFetch()
			}
		}
	}
}
