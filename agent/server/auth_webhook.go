package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
)

// tokenReviewer creates TokenReviews
// (k8s.io/client-go/kubernetes/typed/authentication/v1).
type tokenReviewer interface {
	Create(ctx context.Context, tr *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// accessReviewer creates SubjectAccessReviews
// (k8s.io/client-go/kubernetes/typed/authorization/v1).
type accessReviewer interface {
	Create(ctx context.Context, sar *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// Bounds on the webhooks: entries each cache holds (least recently used
// go first), how long one review may take, and how often and after how
// long a failed one is tried again (the apiserver's webhook back-off,
// shortened: a request waits for it).
const (
	webhookCacheSize     = 8192
	webhookTimeout       = 10 * time.Second
	webhookAttempts      = 3
	webhookFirstBackoff  = 500 * time.Millisecond
	webhookBackoffFactor = 2
)

// webhook is what the two reviews share: a cache of answers on an
// injected clock, and retries of failed calls.
type webhook struct {
	cache *cache.LRUExpireCache
	clock clock.Clock
	// backoff is the wait before the second attempt; 0 retries at once.
	backoff time.Duration
}

func newWebhook(clk clock.Clock) webhook {
	return webhook{cache: cache.NewLRUExpireCacheWithClock(webhookCacheSize, clk), clock: clk, backoff: webhookFirstBackoff}
}

// call runs f up to webhookAttempts times, each bounded by webhookTimeout,
// until it succeeds or ctx ends.
func (w webhook) call(ctx context.Context, f func(ctx context.Context) error) error {
	wait := w.backoff
	var err error
	for attempt := 1; ; attempt++ {
		callCtx, cancel := context.WithTimeout(ctx, webhookTimeout)
		err = f(callCtx)
		cancel()
		if err == nil || attempt == webhookAttempts || ctx.Err() != nil {
			return err
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			case <-w.clock.After(wait):
			}
			wait *= webhookBackoffFactor
		}
	}
}

// tokenReviews checks bearer tokens with TokenReviews
// (authentication.webhook): an answer, accepted or not, is kept for ttl;
// a failed call is not kept.
type tokenReviews struct {
	webhook
	client tokenReviewer
	ttl    time.Duration
}

var _ tokenChecker = (*tokenReviews)(nil)

// tokenAnswer is a cached TokenReview answer.
type tokenAnswer struct {
	user *User
	ok   bool
	err  error
}

func (t *tokenReviews) checkToken(ctx context.Context, token string) (*User, bool, error) {
	// The cache is keyed by a hash: it holds no token.
	key := sha256.Sum256([]byte(token))
	if v, ok := t.cache.Get(key); ok {
		a := v.(tokenAnswer) // only tokenAnswers go in
		return copyUser(a.user), a.ok, a.err
	}
	var resp *authenticationv1.TokenReview
	err := t.call(ctx, func(ctx context.Context) error {
		var err error
		resp, err = t.client.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("TokenReview: %w", err)
	}
	a := tokenAnswer{ok: resp.Status.Authenticated}
	switch {
	case a.ok:
		st := resp.Status.User
		a.user = &User{Name: st.Username, UID: st.UID, Groups: st.Groups}
		if len(st.Extra) > 0 {
			a.user.Extra = map[string][]string{}
			for k, v := range st.Extra {
				a.user.Extra[k] = v
			}
		}
	case resp.Status.Error != "":
		a.err = fmt.Errorf("TokenReview: %s", resp.Status.Error)
	}
	if t.ttl > 0 {
		t.cache.Add(key, a, t.ttl)
	}
	return copyUser(a.user), a.ok, a.err
}

func copyUser(u *User) *User {
	if u == nil {
		return nil
	}
	c := *u
	c.Groups = append([]string(nil), u.Groups...)
	return &c
}

// accessReviews authorizes with SubjectAccessReviews (authorization.mode
// Webhook): an allowed answer is kept for allowedTTL, any other for
// deniedTTL; a failed call is not kept.
type accessReviews struct {
	webhook
	client     accessReviewer
	allowedTTL time.Duration
	deniedTTL  time.Duration
}

var _ authorizer = (*accessReviews)(nil)

func (a *accessReviews) authorize(ctx context.Context, attr attributes) (bool, error) {
	spec := authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb:        attr.Verb,
			Version:     "v1",
			Resource:    "nodes",
			Subresource: attr.Subresource,
			Name:        attr.Name,
		},
		User:   attr.User.Name,
		UID:    attr.User.UID,
		Groups: attr.User.Groups,
	}
	if len(attr.User.Extra) > 0 {
		spec.Extra = map[string]authorizationv1.ExtraValue{}
		for k, v := range attr.User.Extra {
			spec.Extra[k] = v
		}
	}
	keyJSON, err := json.Marshal(spec)
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	key := string(keyJSON)
	if v, ok := a.cache.Get(key); ok {
		return v.(bool), nil // only bools go in
	}
	var resp *authorizationv1.SubjectAccessReview
	err = a.call(ctx, func(ctx context.Context) error {
		var err error
		resp, err = a.client.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	allowed := resp.Status.Allowed && !resp.Status.Denied
	ttl := a.deniedTTL
	if allowed {
		ttl = a.allowedTTL
	}
	if ttl > 0 {
		a.cache.Add(key, allowed, ttl)
	}
	return allowed, nil
}
