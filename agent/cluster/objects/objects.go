package objects

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/internal/kubeclient"
)

// Token renewal, as the kubelet's token manager: a token is renewed once
// 80% of its life or 24 hours have passed, whichever comes first.
const (
	tokenRenewFraction = 0.8
	tokenMaxAge        = 24 * time.Hour
)

// Config configures a Cache.
type Config struct {
	// Client talks to the apiserver. Required.
	Client kubeclient.Interface
	// Clock decides when tokens are renewed and when an object not read
	// for a while stops being watched. Nil means the real clock.
	Clock clock.WithTicker
	// SyncTimeout bounds how long a lookup waits for an object's watch to
	// fetch it the first time. Zero means 10s.
	SyncTimeout time.Duration
	// SyncFrequency is the agent's --sync-frequency, how often a pod's
	// volumes are set up again (and so its objects read): an object no
	// lookup asked for within five of them stops being watched until the
	// next lookup, as with the kubelet. Zero means a minute.
	SyncFrequency time.Duration
}

// Cache serves configMaps, secrets and service account tokens to volume
// plugins and pod workers. Create it with New and start it with Run.
//
// ConfigMaps and secrets are served only to pods registered with
// RegisterPod, and only those they refer to: each is fetched and watched
// on its own (list and watch with the field selector metadata.name=NAME
// in its namespace), from the first pod that refers to it until
// UnregisterPod or RegisterPod of a newer version drops the last
// reference. Nothing lists or watches a namespace's objects: the Node
// authorizer would refuse it (DESIGN.md rule 8).
//
// Its methods are safe for concurrent use. Watches run only while Run
// does; before it, a lookup waits (at most SyncTimeout) for Run.
type Cache struct {
	cfg        Config
	configMaps *watches
	secrets    *watches

	mu sync.Mutex
	// pods are the registered pods' references, by UID; guarded by mu,
	// which also orders RegisterPod and UnregisterPod calls.
	pods map[types.UID]podReferences
	// tokens are the tokens handed out, by request; guarded by mu.
	tokens map[string]*cachedToken
}

// podReferences are what a registered pod refers to.
type podReferences struct {
	namespace string
	references
}

type cachedToken struct {
	tr *authenticationv1.TokenRequest
	// renewAt is when the token is to be renewed; expiresAt when it
	// can no longer be used at all.
	renewAt, expiresAt time.Time
}

// minIdle is the least time an object stays watched without being read,
// as the kubelet's; idlePeriod is how often idle watches are stopped.
const (
	minIdle    = time.Minute
	idlePeriod = time.Minute
)

// New returns a Cache with nothing cached. It contacts no apiserver.
func New(cfg Config) *Cache {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 10 * time.Second
	}
	if cfg.SyncFrequency <= 0 {
		cfg.SyncFrequency = time.Minute
	}
	maxIdle := max(5*cfg.SyncFrequency, minIdle)
	core := cfg.Client
	return &Cache{
		cfg: cfg,
		configMaps: newWatches(kind{
			resource:  v1.Resource("configmaps"),
			newObject: func() runtime.Object { return &v1.ConfigMap{} },
			list: func(ctx context.Context, ns string, opts metav1.ListOptions) (runtime.Object, error) {
				return core.ConfigMaps(ns).List(ctx, opts)
			},
			watch: func(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error) {
				return core.ConfigMaps(ns).Watch(ctx, opts)
			},
			immutable: func(o runtime.Object) bool {
				cm, ok := o.(*v1.ConfigMap)
				return ok && cm.Immutable != nil && *cm.Immutable
			},
			client: cfg.Client,
		}, cfg.Clock, maxIdle),
		secrets: newWatches(kind{
			resource:  v1.Resource("secrets"),
			newObject: func() runtime.Object { return &v1.Secret{} },
			list: func(ctx context.Context, ns string, opts metav1.ListOptions) (runtime.Object, error) {
				return core.Secrets(ns).List(ctx, opts)
			},
			watch: func(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error) {
				return core.Secrets(ns).Watch(ctx, opts)
			},
			immutable: func(o runtime.Object) bool {
				s, ok := o.(*v1.Secret)
				return ok && s.Immutable != nil && *s.Immutable
			},
			client: cfg.Client,
		}, cfg.Clock, maxIdle),
		pods:   map[types.UID]podReferences{},
		tokens: map[string]*cachedToken{},
	}
}

// Run runs the watches until ctx is done, stopping those not read for a
// while, and then stops them all and waits for them. Call it once.
func (o *Cache) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("objects")
	o.configMaps.begin()
	o.secrets.begin()
	defer o.secrets.end()
	defer o.configMaps.end()
	t := o.cfg.Clock.NewTicker(idlePeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			o.configMaps.stopIdle(logger)
			o.secrets.stopIdle(logger)
		}
	}
}

// RegisterPod records the configMaps and secrets pod refers to, starting
// the watches of those no other registered pod refers to, and, when pod
// is a newer version of a registered pod, dropping the references the
// older version made and this one does not. Call it for each pod the
// node is to run, whenever it changes; it does not block on the
// apiserver.
func (o *Cache) RegisterPod(pod *v1.Pod) {
	refs := podReferences{namespace: pod.Namespace, references: referencesOf(pod)}
	o.mu.Lock()
	defer o.mu.Unlock()
	prev, ok := o.pods[pod.UID]
	o.pods[pod.UID] = refs
	// New references first, so that an object both versions refer to
	// keeps its watch.
	for name := range refs.configMaps {
		if !ok || !prev.configMaps[name] {
			o.configMaps.addRef(refs.namespace, name)
		}
	}
	for name := range refs.secrets {
		if !ok || !prev.secrets[name] {
			o.secrets.addRef(refs.namespace, name)
		}
	}
	if ok {
		o.dropLocked(prev, refs.references)
	}
}

// UnregisterPod drops the references of the pod of uid, if registered:
// the watches of objects no other registered pod refers to stop. Call it
// when the pod is gone from the node or has finished.
func (o *Cache) UnregisterPod(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	prev, ok := o.pods[uid]
	if !ok {
		return
	}
	delete(o.pods, uid)
	o.dropLocked(prev, references{})
}

// dropLocked drops the references of prev that keep does not make.
func (o *Cache) dropLocked(prev podReferences, keep references) {
	for name := range prev.configMaps {
		if !keep.configMaps[name] {
			o.configMaps.dropRef(prev.namespace, name)
		}
	}
	for name := range prev.secrets {
		if !keep.secrets[name] {
			o.secrets.dropRef(prev.namespace, name)
		}
	}
}

// GetConfigMap returns the configMap namespace/name as its watch last saw
// it, waiting at most SyncTimeout for the watch's first list; an error
// for which apierrors.IsNotFound holds when it does not exist, another
// error when no registered pod refers to it.
func (o *Cache) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	return get[*v1.ConfigMap](ctx, o.configMaps, o.cfg.SyncTimeout, namespace, name)
}

// GetSecret is GetConfigMap for a secret.
func (o *Cache) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return get[*v1.Secret](ctx, o.secrets, o.cfg.SyncTimeout, namespace, name)
}

func get[T runtime.Object](ctx context.Context, w *watches, timeout time.Duration, namespace, name string) (T, error) {
	var zero T
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	obj, err := w.get(ctx, namespace, name)
	if err != nil {
		return zero, err
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("watch of %s %s/%s holds a %T", w.kind.resource, namespace, name, obj)
	}
	return t, nil
}

// GetServiceAccountToken returns a token of the service account
// namespace/name as req asks, from the TokenRequest API. A token is kept
// and handed out again until 80% of its life or 24h have passed; when the
// apiserver cannot give a new one, the kept one is handed out until it
// expires.
func (o *Cache) GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	key := tokenKey(namespace, name, req)
	now := o.cfg.Clock.Now()
	o.mu.Lock()
	cached := o.tokens[key]
	o.mu.Unlock()
	if cached != nil && now.Before(cached.renewAt) {
		return cached.tr, nil
	}
	tr, err := o.createToken(ctx, namespace, name, req)
	if err != nil {
		if cached != nil && now.Before(cached.expiresAt) {
			return cached.tr, nil
		}
		return nil, fmt.Errorf("request token of service account %s/%s: %w", namespace, name, err)
	}
	exp := tr.Status.ExpirationTimestamp.Time
	life := exp.Sub(now)
	renew := now.Add(min(time.Duration(float64(life)*tokenRenewFraction), tokenMaxAge))
	o.mu.Lock()
	// Tokens of pods that are gone are dropped once they expired.
	for k, t := range o.tokens {
		if !now.Before(t.expiresAt) {
			delete(o.tokens, k)
		}
	}
	o.tokens[key] = &cachedToken{tr: tr, renewAt: renew, expiresAt: exp}
	o.mu.Unlock()
	return tr, nil
}

// boundPodRetries are the waits before asking again for a token bound to a
// pod the apiserver said it does not have.
var boundPodRetries = []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}

// createToken asks the TokenRequest API for a token. The agent asks as
// soon as its watch delivers a new pod, and under load the apiserver can
// answer that the bound pod is not found (50 pods created at once, 1 to 8
// of them, 2026-12-07): the request is made again within 1.5s rather than
// failing the pod's sync, which would be retried only 10s later.
func (o *Cache) createToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	for try := 0; ; try++ {
		tr, err := o.cfg.Client.ServiceAccounts(namespace).CreateToken(ctx, name, req.DeepCopy(), metav1.CreateOptions{})
		if err == nil || try == len(boundPodRetries) || !boundPodNotFound(err, req) {
			return tr, err
		}
		klog.FromContext(ctx).V(2).Info("Token request: the apiserver does not have the bound pod yet; asking again", "serviceAccount", namespace+"/"+name, "pod", req.Spec.BoundObjectRef.Name, "after", boundPodRetries[try])
		select {
		case <-o.cfg.Clock.After(boundPodRetries[try]):
		case <-ctx.Done():
			return nil, err
		}
	}
}

// boundPodNotFound reports whether err says that the pod req's token is to
// be bound to does not exist.
func boundPodNotFound(err error, req *authenticationv1.TokenRequest) bool {
	ref := req.Spec.BoundObjectRef
	if ref == nil || ref.Kind != "Pod" || !apierrors.IsNotFound(err) {
		return false
	}
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return false
	}
	d := status.Status().Details
	return (d.Kind == "pod" || d.Kind == "pods") && d.Name == ref.Name
}

// tokenKey identifies a token request: the account, audiences, expiry and
// the object it is bound to.
func tokenKey(namespace, name string, req *authenticationv1.TokenRequest) string {
	aud := slices.Clone(req.Spec.Audiences)
	slices.Sort(aud)
	var exp int64
	if req.Spec.ExpirationSeconds != nil {
		exp = *req.Spec.ExpirationSeconds
	}
	var bound string
	if ref := req.Spec.BoundObjectRef; ref != nil {
		bound = ref.Kind + "/" + ref.Name + "/" + string(ref.UID)
	}
	return fmt.Sprintf("%s/%s|%s|%d|%s", namespace, name, strings.Join(aud, ","), exp, bound)
}
