package server

import (
	"bufio"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
)

// Auth protects the read-only endpoints when they are served on an address
// other than loopback: they are then served over TLS only, and a request
// needs a client certificate signed by ClientCAFile or a bearer token
// listed in TokenAuthFile.
type Auth struct {
	// CertFile and KeyFile are the serving certificate and key
	// (--tls-cert-file, --tls-private-key-file).
	CertFile string
	KeyFile  string
	// ClientCAFile verifies client certificates (--client-ca-file).
	ClientCAFile string
	// TokenAuthFile lists bearer tokens as kube-apiserver's
	// --token-auth-file does: "token,user,uid[,groups]" per line.
	TokenAuthFile string
}

// IsLoopback reports whether address only accepts connections from this
// host.
func IsLoopback(address string) bool {
	if address == "localhost" {
		return true
	}
	ip := net.ParseIP(address)
	return ip != nil && ip.IsLoopback()
}

// Validate refuses serving on a non-loopback address without TLS and a
// way to authenticate clients; flag names are the kubelet's.
func (a Auth) Validate(address string) error {
	if IsLoopback(address) {
		return nil
	}
	var missing []string
	if a.CertFile == "" || a.KeyFile == "" {
		missing = append(missing, "--tls-cert-file and --tls-private-key-file")
	}
	if a.ClientCAFile == "" && a.TokenAuthFile == "" {
		missing = append(missing, "--client-ca-file or --token-auth-file")
	}
	if len(missing) > 0 {
		return fmt.Errorf("--address %q is reachable from other hosts: serving pods, logs and metrics there needs %s (or bind --address 127.0.0.1)", address, strings.Join(missing, ", and "))
	}
	return nil
}

// authenticator checks requests on a TLS listener.
type authenticator struct {
	tokens map[string]string // token -> user
	certs  bool
}

// tlsConfig loads what a.Validate asked for and returns the server's TLS
// configuration and the request check.
func (a Auth) tlsConfig() (*tls.Config, *authenticator, error) {
	cert, err := tls.LoadX509KeyPair(a.CertFile, a.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-cert-file %s, --tls-private-key-file %s: %w", a.CertFile, a.KeyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	auth := &authenticator{}
	if a.ClientCAFile != "" {
		pem, err := os.ReadFile(a.ClientCAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("--client-ca-file %s: no PEM certificate in it", a.ClientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		auth.certs = true
	}
	if a.TokenAuthFile != "" {
		if auth.tokens, err = readTokens(a.TokenAuthFile); err != nil {
			return nil, nil, err
		}
	}
	return cfg, auth, nil
}

// readTokens reads a token file; each error names the file and line.
func readTokens(path string) (map[string]string, error) {
	f, err := os.Open(path) //nolint:gosec // G304: the file --token-auth-file names
	if err != nil {
		return nil, fmt.Errorf("--token-auth-file: %w", err)
	}
	defer f.Close()
	tokens := map[string]string{}
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
			return nil, fmt.Errorf("--token-auth-file %s:%d: want token,user,uid[,groups]", path, line)
		}
		tokens[rec[0]] = rec[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--token-auth-file %s: %w", path, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("--token-auth-file %s: no tokens", path)
	}
	return tokens, nil
}

// wrap lets through requests with a verified client certificate or a
// known bearer token and answers 401 to the rest.
func (a *authenticator) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.certs && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			next.ServeHTTP(w, r)
			return
		}
		if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && a.knows(token) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="minikubelet"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	})
}

// knows compares in constant time, so that a token cannot be guessed byte
// by byte from response times.
func (a *authenticator) knows(token string) bool {
	found := false
	for t := range a.tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			found = true
		}
	}
	return found
}
