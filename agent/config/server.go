package config

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/minikubelet/minikubelet/internal/localsock"
)

// Authorization modes of the kubelet port (--authorization-mode).
const (
	AuthorizationAlwaysAllow = "AlwaysAllow"
	AuthorizationWebhook     = "Webhook"
)

// ServerConfig is the endpoints' part of Config: the kubelet port, its
// serving certificate, who may use it, and the local socket. Flag names
// are the kubelet's, except --socket and --token-auth-file.
type ServerConfig struct {
	// Port is the kubelet port: HTTPS, authenticated and authorized; 0
	// disables it.
	Port int
	// SocketPath is the root-only Unix socket that serves every endpoint
	// to the local command line; "" disables it.
	SocketPath string
	// TLSCertFile and TLSPrivateKeyFile are the kubelet port's serving
	// certificate; without them (and without RotateServerCertificates) a
	// self-signed one is made and kept in CertDir.
	TLSCertFile       string
	TLSPrivateKeyFile string
	// CertDir keeps the self-signed and the rotated serving certificates,
	// and the managed client certificate; "" is <root-dir>/pki.
	CertDir string
	// RotateServerCertificates requests the serving certificate from the
	// apiserver (a kubernetes.io/kubelet-serving CSR) and renews it before
	// it expires (serverTLSBootstrap); node mode only.
	RotateServerCertificates bool
	// ClientCAFile verifies client certificates on the kubelet port.
	ClientCAFile string
	// TokenAuthFile lists bearer tokens for the kubelet port, one
	// "token,user,uid[,groups]" line each (kube-apiserver's format).
	TokenAuthFile string
	// AnonymousAuth lets requests without credentials through as
	// system:anonymous, to be authorized as such.
	AnonymousAuth bool
	// AuthenticationTokenWebhook checks bearer tokens with the apiserver
	// (TokenReview), keeping answers AuthenticationTokenWebhookCacheTTL;
	// node mode only (ignored standalone).
	AuthenticationTokenWebhook         bool
	AuthenticationTokenWebhookCacheTTL time.Duration
	// AuthorizationMode is AlwaysAllow or Webhook (SubjectAccessReview,
	// node mode only); "" is Webhook in node mode and AlwaysAllow
	// standalone (AuthorizationModeToUse).
	AuthorizationMode string
	// Cache lifetimes of the Webhook authorizer's answers.
	AuthorizationWebhookCacheAuthorizedTTL   time.Duration
	AuthorizationWebhookCacheUnauthorizedTTL time.Duration
	// EnableDebuggingHandlers serves logs, exec, attach, port-forward,
	// /runningpods/, /configz and pprof on the kubelet port.
	EnableDebuggingHandlers bool
}

// defaultServerConfig returns the defaults: the kubelet's config file
// defaults (anonymous off, the token webhook on, Webhook authorization),
// also for the flags, whose kubelet defaults (anonymous on, AlwaysAllow)
// would open the port to anyone who reaches it.
func defaultServerConfig() ServerConfig {
	return ServerConfig{
		Port:                                     10250,
		SocketPath:                               localsock.DefaultPath,
		AuthenticationTokenWebhook:               true,
		AuthenticationTokenWebhookCacheTTL:       2 * time.Minute,
		AuthorizationWebhookCacheAuthorizedTTL:   5 * time.Minute,
		AuthorizationWebhookCacheUnauthorizedTTL: 30 * time.Second,
		EnableDebuggingHandlers:                  true,
	}
}

// addServerFlags registers the endpoints' flags.
func (c *ServerConfig) addServerFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Port, "port", c.Port, "The kubelet port, on --address: HTTPS, with the kubelet's endpoints (/pods, /healthz, /metrics, /stats/summary, /containerLogs, /configz, exec, attach, port-forward, ...); every request is authenticated (client certificate, bearer token, or anonymous when allowed) and authorized (nodes/<subresource>, as the kubelet maps them). 0 disables it. Without any way to authenticate (no --client-ca-file or --token-auth-file, and standalone) it is not served.")
	fs.StringVar(&c.SocketPath, "socket", c.SocketPath, "Unix socket that serves every endpoint, without credentials, to root only (the peer's credentials are checked on each connection); the minikubelet command line (pods, logs, ...) uses it. Its directory is made root-only. \"\" disables it. Not a kubelet flag.")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", c.TLSCertFile, "Serving certificate (PEM, intermediates after it) of the kubelet port. Without it, and without --rotate-server-certificates, a self-signed certificate is made and kept in --cert-dir.")
	fs.StringVar(&c.TLSPrivateKeyFile, "tls-private-key-file", c.TLSPrivateKeyFile, "Private key (PEM) of --tls-cert-file.")
	fs.StringVar(&c.CertDir, "cert-dir", c.CertDir, "Directory of the kubelet port's self-signed certificate (kubelet.crt, kubelet.key), of the serving certificates --rotate-server-certificates obtains (kubelet-server-current.pem) and of the client certificates --bootstrap-kubeconfig and --rotate-certificates obtain (kubelet-client-current.pem); each *-current.pem is a link to a dated file. Default: <root-dir>/pki.")
	fs.BoolVar(&c.RotateServerCertificates, "rotate-server-certificates", c.RotateServerCertificates, "Request the kubelet port's serving certificate from the apiserver (a CertificateSigningRequest for signer kubernetes.io/kubelet-serving, which an administrator or a controller approves), and request a new one at 70-90% of its lifetime. Handshakes fail until the first is issued. Node mode only.")
	fs.StringVar(&c.ClientCAFile, "client-ca-file", c.ClientCAFile, "CA bundle (PEM) of the kubelet port's client certificates: a request with a certificate it signs is authenticated as the certificate's common name, in the groups of its organizations.")
	fs.StringVar(&c.TokenAuthFile, "token-auth-file", c.TokenAuthFile, "Bearer tokens of the kubelet port, one 'token,user,uid[,\"group1,group2\"]' line each (kube-apiserver's format). Not a kubelet flag.")
	fs.BoolVar(&c.AnonymousAuth, "anonymous-auth", c.AnonymousAuth, "Let requests to the kubelet port without credentials through as user system:anonymous, group system:unauthenticated, to be authorized as such. Refused with AlwaysAllow authorization. Default false, as in a kubelet config file (the kubelet's flag defaults to true).")
	fs.BoolVar(&c.AuthenticationTokenWebhook, "authentication-token-webhook", c.AuthenticationTokenWebhook, "Check the kubelet port's bearer tokens (service account tokens, ...) with the apiserver's TokenReview API. Node mode only. Default true, as in a kubelet config file.")
	fs.DurationVar(&c.AuthenticationTokenWebhookCacheTTL, "authentication-token-webhook-cache-ttl", c.AuthenticationTokenWebhookCacheTTL, "How long a TokenReview's answer is kept.")
	fs.StringVar(&c.AuthorizationMode, "authorization-mode", c.AuthorizationMode, "How the kubelet port authorizes an authenticated request: Webhook (ask the apiserver with a SubjectAccessReview for nodes/<subresource>, so the cluster's RBAC decides; node mode only) or AlwaysAllow. Default: Webhook in node mode, AlwaysAllow standalone.")
	fs.DurationVar(&c.AuthorizationWebhookCacheAuthorizedTTL, "authorization-webhook-cache-authorized-ttl", c.AuthorizationWebhookCacheAuthorizedTTL, "How long a SubjectAccessReview that allowed is kept.")
	fs.DurationVar(&c.AuthorizationWebhookCacheUnauthorizedTTL, "authorization-webhook-cache-unauthorized-ttl", c.AuthorizationWebhookCacheUnauthorizedTTL, "How long a SubjectAccessReview that did not allow is kept.")
	fs.BoolVar(&c.EnableDebuggingHandlers, "enable-debugging-handlers", c.EnableDebuggingHandlers, "Serve container logs, exec, attach, port-forward, /runningpods/, /configz and pprof on the kubelet port (the local socket always serves them).")
}

// AuthorizationModeToUse is --authorization-mode, or when it is not set,
// Webhook in node mode and AlwaysAllow standalone, where no apiserver can
// answer.
func (c *Config) AuthorizationModeToUse() string {
	switch {
	case c.AuthorizationMode != "":
		return c.AuthorizationMode
	case c.Kubeconfig != "":
		return AuthorizationWebhook
	default:
		return AuthorizationAlwaysAllow
	}
}

// CanAuthenticate reports whether the kubelet port has a way to
// authenticate a request: without one it is not served.
func (c *Config) CanAuthenticate() bool {
	return c.ClientCAFile != "" || c.TokenAuthFile != "" || c.AnonymousAuth || c.TokenWebhook()
}

// TokenWebhook reports whether bearer tokens are checked with TokenReview:
// asked for, in node mode.
func (c *Config) TokenWebhook() bool {
	return c.AuthenticationTokenWebhook && c.Kubeconfig != ""
}

// CertDirectory is --cert-dir, or <root-dir>/pki.
func (c *Config) CertDirectory() string {
	if c.CertDir != "" {
		return c.CertDir
	}
	return filepath.Join(c.RootDir, "pki")
}

// validateServer reports the endpoints' bad values and the combinations
// that would leave the kubelet port open, naming the flags and the config
// file's fields.
func (c *Config) validateServer() []error {
	var errs []error
	if err := checkPort(c.Port); err != nil {
		errs = append(errs, fmt.Errorf("--port (port): %w", err))
	}
	switch c.AuthorizationMode {
	case "", AuthorizationAlwaysAllow, AuthorizationWebhook:
	default:
		errs = append(errs, fmt.Errorf("--authorization-mode (authorization.mode): %q is not one of AlwaysAllow, Webhook", c.AuthorizationMode))
	}
	for _, d := range []struct {
		flag string
		d    time.Duration
	}{
		{"authentication-token-webhook-cache-ttl (authentication.webhook.cacheTTL)", c.AuthenticationTokenWebhookCacheTTL},
		{"authorization-webhook-cache-authorized-ttl (authorization.webhook.cacheAuthorizedTTL)", c.AuthorizationWebhookCacheAuthorizedTTL},
		{"authorization-webhook-cache-unauthorized-ttl (authorization.webhook.cacheUnauthorizedTTL)", c.AuthorizationWebhookCacheUnauthorizedTTL},
	} {
		if err := checkNotNegative(d.d); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", d.flag, err))
		}
	}
	if c.SocketPath != "" && (!filepath.IsAbs(c.SocketPath) || len(c.SocketPath) > 107) {
		errs = append(errs, fmt.Errorf("--socket: %q must be an absolute path of at most 107 bytes", c.SocketPath))
	}
	if (c.TLSCertFile == "") != (c.TLSPrivateKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file (tlsCertFile) and --tls-private-key-file (tlsPrivateKeyFile): give both or neither"))
	}
	if c.RotateServerCertificates && c.Kubeconfig == "" {
		errs = append(errs, errors.New("--rotate-server-certificates (serverTLSBootstrap): needs --kubeconfig, the apiserver that signs the certificate"))
	}
	if c.RotateServerCertificates && c.TLSCertFile != "" {
		errs = append(errs, errors.New("--rotate-server-certificates (serverTLSBootstrap) and --tls-cert-file (tlsCertFile): choose one source of the serving certificate"))
	}
	if c.AuthorizationMode == AuthorizationWebhook && c.Kubeconfig == "" {
		errs = append(errs, errors.New("--authorization-mode (authorization.mode) Webhook: needs --kubeconfig, the apiserver that answers SubjectAccessReviews; standalone, use AlwaysAllow with client certificates (--client-ca-file) or --token-auth-file"))
	}
	if c.Port != 0 && c.AnonymousAuth && c.AuthorizationModeToUse() == AuthorizationAlwaysAllow {
		errs = append(errs, fmt.Errorf("--anonymous-auth (authentication.anonymous.enabled) with authorization mode AlwaysAllow (--authorization-mode, authorization.mode; the default standalone) lets anyone who reaches port %d read pods' logs and run commands in them: turn anonymous authentication off, or authorize with --authorization-mode Webhook in node mode", c.Port))
	}
	return errs
}
