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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
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
	Client kubernetes.Interface
	// Clock decides when tokens are renewed. Nil means the real clock.
	Clock clock.PassiveClock
	// SyncTimeout bounds how long a lookup waits for a namespace's
	// informers to list their objects the first time. Zero means 10s.
	SyncTimeout time.Duration
}

// Cache serves configMaps, secrets and service account tokens to volume
// plugins and pod workers. Create it with New and start it with Run;
// its methods are safe for concurrent use, and before Run or after it
// ended they answer from what is cached (configMaps and secrets: an error).
type Cache struct {
	cfg Config
	// stop is closed when Run's ctx is done: it stops the informers.
	stop chan struct{}
	// running is closed when Run starts: informers are started only then.
	running chan struct{}

	mu sync.Mutex
	// namespaces holds the informers of each namespace asked about;
	// guarded by mu.
	namespaces map[string]*nsObjects
	// tokens are the tokens handed out, by request; guarded by mu.
	tokens map[string]*cachedToken
}

// nsObjects are one namespace's configMap and secret informers.
type nsObjects struct {
	factory    informers.SharedInformerFactory
	configMaps cache.SharedIndexInformer
	secrets    cache.SharedIndexInformer
}

type cachedToken struct {
	tr *authenticationv1.TokenRequest
	// renewAt is when the token is to be renewed; expiresAt when it
	// can no longer be used at all.
	renewAt, expiresAt time.Time
}

// New returns a Cache with nothing cached.
func New(cfg Config) *Cache {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = 10 * time.Second
	}
	return &Cache{
		cfg:        cfg,
		stop:       make(chan struct{}),
		running:    make(chan struct{}),
		namespaces: map[string]*nsObjects{},
		tokens:     map[string]*cachedToken{},
	}
}

// Run lets informers start and stops them all when ctx is done. Call it
// once.
func (o *Cache) Run(ctx context.Context) {
	close(o.running)
	<-ctx.Done()
	close(o.stop)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ns := range o.namespaces {
		ns.factory.Shutdown()
	}
}

// namespace returns the namespace's informers, starting them the first
// time, and waits (at most SyncTimeout) for Run to have started and for
// them to have listed once.
func (o *Cache) namespace(ctx context.Context, namespace string) (*nsObjects, error) {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.SyncTimeout)
	defer cancel()
	select {
	case <-o.running:
	case <-ctx.Done():
		return nil, fmt.Errorf("objects of namespace %s: not running: %w", namespace, ctx.Err())
	}
	o.mu.Lock()
	ns, ok := o.namespaces[namespace]
	if !ok {
		f := informers.NewSharedInformerFactoryWithOptions(o.cfg.Client, 0, informers.WithNamespace(namespace))
		ns = &nsObjects{
			factory:    f,
			configMaps: f.Core().V1().ConfigMaps().Informer(),
			secrets:    f.Core().V1().Secrets().Informer(),
		}
		o.namespaces[namespace] = ns
		f.Start(o.stop)
	}
	o.mu.Unlock()
	if ns.configMaps.HasSynced() && ns.secrets.HasSynced() {
		return ns, nil
	}
	if !cache.WaitForCacheSync(ctx.Done(), ns.configMaps.HasSynced, ns.secrets.HasSynced) {
		return nil, fmt.Errorf("configMaps and secrets of namespace %s: not listed from the apiserver within %v", namespace, o.cfg.SyncTimeout)
	}
	return ns, nil
}

// GetConfigMap returns namespace/name from the namespace's informer; an
// error for which apierrors.IsNotFound holds when there is none.
func (o *Cache) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	ns, err := o.namespace(ctx, namespace)
	if err != nil {
		return nil, err
	}
	cm, err := listerGet[*v1.ConfigMap](ns.configMaps, namespace, name, v1.Resource("configmaps"))
	if err != nil {
		return nil, err
	}
	return cm, nil
}

// GetSecret is GetConfigMap for a secret.
func (o *Cache) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	ns, err := o.namespace(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return listerGet[*v1.Secret](ns.secrets, namespace, name, v1.Resource("secrets"))
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
	tr, err := o.cfg.Client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req.DeepCopy(), metav1.CreateOptions{})
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
