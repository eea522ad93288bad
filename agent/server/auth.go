package server

import (
	"bufio"
	"context"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/utils/clock"
)

// AuthConfig configures who may use the kubelet port, as the kubelet's
// authentication and authorization settings do.
type AuthConfig struct {
	// ClientCAFile verifies client certificates (--client-ca-file,
	// authentication.x509.clientCAFile): the user is the certificate's
	// common name, the groups its organizations.
	ClientCAFile string
	// TokenAuthFile lists bearer tokens as kube-apiserver's
	// --token-auth-file does (not a kubelet flag).
	TokenAuthFile string
	// TokenReviews, when set, checks bearer tokens with the apiserver
	// (authentication.webhook.enabled), keeping each answer TokenCacheTTL.
	TokenReviews  tokenReviewer
	TokenCacheTTL time.Duration
	// Anonymous lets requests without credentials through as
	// system:anonymous (authentication.anonymous.enabled).
	Anonymous bool
	// SubjectAccessReviews, when set, asks the apiserver whether a
	// request is allowed (authorization.mode Webhook), keeping an allowed
	// answer AuthorizedTTL and another UnauthorizedTTL. Nil allows every
	// authenticated request (AlwaysAllow).
	SubjectAccessReviews           accessReviewer
	AuthorizedTTL, UnauthorizedTTL time.Duration
}

// newAuth reads cfg's files and builds the kubelet port's guard for node.
func newAuth(cfg AuthConfig, node string, clk clock.Clock) (*auth, error) {
	a := &auth{authn: &authenticator{anonymous: cfg.Anonymous, clock: clk}, authz: alwaysAllow{}, nodeName: node}
	if cfg.ClientCAFile != "" {
		pool, err := readClientCAs(cfg.ClientCAFile)
		if err != nil {
			return nil, err
		}
		a.authn.clientCAs = pool
	}
	if cfg.TokenAuthFile != "" {
		tokens, err := readTokens(cfg.TokenAuthFile)
		if err != nil {
			return nil, err
		}
		a.authn.tokens = append(a.authn.tokens, tokens)
	}
	if cfg.TokenReviews != nil {
		a.authn.tokens = append(a.authn.tokens, &tokenReviews{webhook: newWebhook(clk), client: cfg.TokenReviews, ttl: cfg.TokenCacheTTL})
	}
	if cfg.SubjectAccessReviews != nil {
		a.authz = &accessReviews{webhook: newWebhook(clk), client: cfg.SubjectAccessReviews, allowedTTL: cfg.AuthorizedTTL, deniedTTL: cfg.UnauthorizedTTL}
	}
	return a, nil
}

// Well-known user and group names, the apiserver's.
const (
	anonymousUser        = "system:anonymous"
	unauthenticatedGroup = "system:unauthenticated"
	authenticatedGroup   = "system:authenticated"
)

// User is who made a request, as authentication found it.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// tokenChecker checks a bearer token: the user and true for a valid one;
// nil, false and nil for one it does not know; an error when it cannot
// tell (an apiserver that does not answer). Safe for concurrent use.
type tokenChecker interface {
	checkToken(ctx context.Context, token string) (*User, bool, error)
}

// errInvalidToken is a bearer token no checker accepts.
var errInvalidToken = errors.New("invalid bearer token")

// authenticator finds who made a request on the kubelet port, as the
// kubelet's does: a verified client certificate, else a bearer token (the
// Authorization header, or a WebSocket subprotocol), else anonymous when
// allowed. A credential that is presented and fails (a certificate of
// another CA, an unknown token) is not taken for anonymous: the request
// gets 401.
type authenticator struct {
	// clientCAs verifies client certificates; nil when they are not
	// used (no --client-ca-file).
	clientCAs *x509.CertPool
	// tokens check bearer tokens in order (the token file, TokenReview).
	tokens    []tokenChecker
	anonymous bool
	clock     clock.PassiveClock
}

// configured reports whether any request can be authenticated.
func (a *authenticator) configured() bool {
	return a.clientCAs != nil || len(a.tokens) > 0 || a.anonymous
}

// authenticate returns who made r, or an error when r must get 401. It
// removes a bearer token it accepted from r, so that it goes no further.
func (a *authenticator) authenticate(r *http.Request) (*User, error) {
	var errs []error
	if u, ok, err := a.certificateUser(r); ok {
		return withAuthenticated(u), nil
	} else if err != nil {
		errs = append(errs, err)
	}
	if u, ok, err := a.tokenUser(r); ok {
		return withAuthenticated(u), nil
	} else if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if a.anonymous {
		return &User{Name: anonymousUser, Groups: []string{unauthenticatedGroup}}, nil
	}
	return nil, errors.New("no credentials")
}

// withAuthenticated adds system:authenticated to u's groups, as the
// apiserver does for every authenticated user.
func withAuthenticated(u *User) *User {
	if !slices.Contains(u.Groups, authenticatedGroup) {
		u.Groups = append(slices.Clip(u.Groups), authenticatedGroup)
	}
	return u
}

// certificateUser verifies r's client certificate against the client CAs
// for client authentication: the user is its common name, the groups its
// organizations.
func (a *authenticator) certificateUser(r *http.Request) (*User, bool, error) {
	if a.clientCAs == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	certs := r.TLS.PeerCertificates
	opts := x509.VerifyOptions{
		Roots:         a.clientCAs,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		CurrentTime:   a.clock.Now(),
	}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return nil, false, fmt.Errorf("client certificate %q: %w", certs[0].Subject.CommonName, err)
	}
	if certs[0].Subject.CommonName == "" {
		return nil, false, errors.New("client certificate without a common name (the user)")
	}
	return &User{Name: certs[0].Subject.CommonName, Groups: slices.Clone(certs[0].Subject.Organization)}, true, nil
}

// bearerProtocolPrefix starts the WebSocket subprotocol that carries a
// bearer token, base64url-encoded without padding, where a browser cannot
// set the Authorization header.
const bearerProtocolPrefix = "base64url.bearer.authorization.k8s.io." //nolint:gosec // G101: a protocol name, no credential

// tokenUser checks the bearer token of r, if it has one.
func (a *authenticator) tokenUser(r *http.Request) (*User, bool, error) {
	if len(a.tokens) == 0 {
		return nil, false, nil
	}
	token, fromHeader, err := bearerToken(r)
	if err != nil || token == "" {
		return nil, false, err
	}
	var errs []error
	for _, c := range a.tokens {
		u, ok, err := c.checkToken(r.Context(), token)
		if ok {
			if fromHeader {
				r.Header.Del("Authorization")
			} else {
				dropBearerProtocol(r)
			}
			return u, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, false, errors.Join(errs...)
	}
	return nil, false, errInvalidToken
}

// bearerToken returns the token of r's "Authorization: Bearer" header, or
// of its WebSocket bearer subprotocol (fromHeader false); "" when it has
// neither.
func bearerToken(r *http.Request) (token string, fromHeader bool, err error) {
	if h := strings.TrimSpace(r.Header.Get("Authorization")); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "bearer") {
			return strings.TrimSpace(token), true, nil
		}
		return "", false, nil
	}
	if !isWebSocket(r) {
		return "", false, nil
	}
	for _, p := range protocols(r) {
		encoded, ok := strings.CutPrefix(p, bearerProtocolPrefix)
		if !ok {
			continue
		}
		if token != "" {
			return "", false, errors.New("more than one bearer token subprotocol")
		}
		b, err := base64.RawURLEncoding.DecodeString(encoded)
		if err != nil || !utf8.Valid(b) || len(b) == 0 {
			return "", false, errors.New("bearer token subprotocol: not a base64url-encoded token")
		}
		token = string(b)
	}
	return token, false, nil
}

// isWebSocket reports whether r asks to upgrade to a WebSocket.
func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") && headerHasToken(r.Header.Values("Connection"), "upgrade")
}

func headerHasToken(values []string, token string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// protocols are r's WebSocket subprotocols.
func protocols(r *http.Request) []string {
	var out []string
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// dropBearerProtocol removes the bearer token subprotocol from r, so that
// the handler negotiates only the real ones.
func dropBearerProtocol(r *http.Request) {
	var keep []string
	for _, p := range protocols(r) {
		if !strings.HasPrefix(p, bearerProtocolPrefix) {
			keep = append(keep, p)
		}
	}
	r.Header.Del("Sec-WebSocket-Protocol")
	if len(keep) > 0 {
		r.Header.Set("Sec-WebSocket-Protocol", strings.Join(keep, ","))
	}
}

// fileTokens are the bearer tokens of a --token-auth-file.
type fileTokens map[string]*User

var _ tokenChecker = fileTokens(nil)

// checkToken compares in constant time, so that a token cannot be guessed
// byte by byte from response times.
func (f fileTokens) checkToken(_ context.Context, token string) (*User, bool, error) {
	var found *User
	for t, u := range f {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			found = u
		}
	}
	if found == nil {
		return nil, false, nil
	}
	u := *found
	u.Groups = slices.Clone(found.Groups)
	return &u, true, nil
}

// readTokens reads a token file as kube-apiserver's --token-auth-file:
// "token,user,uid[,\"group1,group2\"]" per line. Each error names the file
// and line.
func readTokens(path string) (fileTokens, error) {
	f, err := os.Open(path) //nolint:gosec // G304: the file --token-auth-file names
	if err != nil {
		return nil, fmt.Errorf("--token-auth-file: %w", err)
	}
	defer f.Close()
	tokens := fileTokens{}
	line := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		rec, err := csv.NewReader(strings.NewReader(text)).Read()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("--token-auth-file %s:%d: %w", path, line, err)
		}
		if len(rec) < 3 || rec[0] == "" || rec[1] == "" {
			return nil, fmt.Errorf("--token-auth-file %s:%d: want token,user,uid[,\"group1,group2\"]", path, line)
		}
		u := &User{Name: rec[1], UID: rec[2]}
		if len(rec) > 3 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		tokens[rec[0]] = u
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--token-auth-file %s: %w", path, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("--token-auth-file %s: no tokens", path)
	}
	return tokens, nil
}

// readClientCAs reads the --client-ca-file bundle.
func readClientCAs(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path) //nolint:gosec // G304: the file --client-ca-file names
	if err != nil {
		return nil, fmt.Errorf("--client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--client-ca-file %s: no PEM certificate in it", path)
	}
	return pool, nil
}
