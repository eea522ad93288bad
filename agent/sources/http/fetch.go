package http

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	nethttp "net/http"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/sources"
)

// run is the state of one Source.Run; only its goroutine touches it (fetch,
// which runs on a goroutine of its own, reads only the Source).
type run struct {
	s      *Source
	logger klog.Logger

	// good holds the pods of the last good body, goodHash identifies that
	// body; hasGood is false until a body was good.
	good     []*v1.Pod
	goodHash [sha256.Size]byte
	hasGood  bool
	// badHash identifies the last body that was judged bad, badErr why; nil
	// when there was none. A body is judged once.
	badHash [sha256.Size]byte
	badErr  error
	// err is the error of the last fetch, nil when it was good.
	err error
	// logged is the message of the error last logged, empty when the last
	// fetch was good.
	logged string

	// outbox holds the snapshot waiting to be sent.
	outbox sources.Outbox
}

// fetchResult is the outcome of one fetch of the URL, begun at seen.
type fetchResult struct {
	data []byte
	err  error
	seen time.Time
}

// judgeFetch judges the body of a fetch unless it is one already judged,
// logs a new error and makes the resulting snapshot pending. A fetch cut
// short by ctx changes nothing.
func (r *run) judgeFetch(ctx context.Context, res fetchResult) {
	if ctx.Err() != nil {
		return
	}
	data, err, seen := res.data, res.err, res.seen
	if err == nil {
		h := sha256.Sum256(data)
		switch {
		case r.hasGood && h == r.goodHash:
			// The good body again: its pods stand, the error is gone.
		case r.badErr != nil && h == r.badHash:
			err = r.badErr
		default:
			err = r.judge(data, h, seen)
		}
	}
	r.err = err
	r.log()
	r.prepare()
}

// fetch GETs the URL and returns the body of a 200 answer. It reads at most
// manifest.MaxSize bytes and one more, to tell a body over the cap. It
// reads only the Source's configuration: it runs on a goroutine of its own.
func (r *run) fetch(ctx context.Context) ([]byte, error) {
	req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, r.s.url, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if r.s.header != nil {
		req.Header = r.s.header.Clone()
	}
	resp, err := r.s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err) // a *url.Error names the URL, without its password
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != nethttp.StatusOK {
		return nil, fmt.Errorf("server answered %s: want 200 OK", resp.Status)
	}
	tooLarge := fmt.Errorf("body is larger than the cap of %d bytes (10 MiB): serve fewer or smaller pods", manifest.MaxSize)
	if resp.ContentLength > manifest.MaxSize {
		return nil, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, manifest.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if len(data) > manifest.MaxSize {
		return nil, tooLarge
	}
	return data, nil
}

// judge decodes and validates a body not judged before, whose hash is h,
// and records it as the good or the last bad body.
func (r *run) judge(data []byte, h [sha256.Size]byte, seen time.Time) error {
	pods, err := manifest.LoadList(data, manifest.Identity{
		NodeName: r.s.nodeName,
		Source:   sources.HTTP,
		Origin:   r.s.origin,
		Seen:     seen,
	})
	if err != nil {
		r.badHash, r.badErr = h, fmt.Errorf("body rejected: %w", err)
		return r.badErr
	}
	r.good, r.goodHash, r.hasGood = pods, h, true
	r.logger.V(2).Info("Read pods from the manifest URL", "pods", klog.KObjSlice(pods))
	return nil
}

// log logs the current error once: again only when it changes, or when it
// comes back after a good fetch.
func (r *run) log() {
	if r.err == nil {
		if r.logged != "" {
			r.logger.Info("Manifest URL is good again")
			r.logged = ""
		}
		return
	}
	if msg := r.err.Error(); msg != r.logged {
		r.logger.Error(r.err, "Cannot use the manifest URL, keeping the pods of its last good body", "pods", len(r.good))
		r.logged = msg
	}
}

// prepare builds the snapshot of the current state and makes it pending
// unless it equals the last one sent.
func (r *run) prepare() {
	r.outbox.Offer(r.snapshot())
}

// snapshot returns the Update of the current state, and a key that is equal
// for two snapshots exactly when they hold the same pods (by body) and the
// same error.
func (r *run) snapshot() (sources.Update, string) {
	u := sources.Update{Source: sources.HTTP, Pods: slices.Clone(r.good), Origins: map[types.UID]string{}}
	if u.Pods == nil {
		u.Pods = []*v1.Pod{}
	}
	for _, p := range u.Pods {
		u.Origins[p.UID] = r.s.origin
	}
	key := ""
	if r.hasGood {
		key = "P\x00" + hex.EncodeToString(r.goodHash[:]) + "\n"
	}
	if r.err != nil {
		u.Incomplete = true
		u.Errors = []sources.ManifestError{{Source: sources.HTTP, Origin: r.s.origin, Err: r.err}}
		key += "E\x00" + r.err.Error() + "\n"
	}
	return u, key
}
