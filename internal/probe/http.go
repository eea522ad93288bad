package probe

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// maxBody bounds what is read of a response body.
const maxBody = 10 << 10

// HTTP runs HTTP GET checks. Safe for concurrent use.
type HTTP struct {
	client    *http.Client
	userAgent string
}

// NewHTTP returns an HTTP checker that sends userAgent unless a check sets
// its own. As the kubelet's prober it keeps no connection alive between
// checks, skips certificate verification for HTTPS, uses no proxy, and
// follows redirects only to the same host: a redirect elsewhere is not
// followed and counts as the 3xx it is.
func NewHTTP(userAgent string) *HTTP {
	transport := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet: probes do not verify certificates
		DisableKeepAlives:  true,
		DisableCompression: true,
		Proxy:              nil,
		DialContext:        (&net.Dialer{}).DialContext,
	}
	return &HTTP{
		userAgent: userAgent,
		client: &http.Client{
			Transport: transport,
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 10 || req.URL.Host != via[0].URL.Host {
					return http.ErrUseLastResponse
				}
				return nil
			},
		},
	}
}

// URL is where get points for a program at host:port.
func URL(get *v1.HTTPGetAction, host string, port int) string {
	if get.Host != "" {
		host = get.Host
	}
	scheme := strings.ToLower(string(get.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := get.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	return u.String() + path
}

// Get sends get to host:port (get.Host wins when set) and waits as long as
// ctx allows. A status from 200 to 399 is Success; any other status, a
// refused connection or a timeout is Failure. err is set only when no
// request could be made of get.
func (h *HTTP) Get(ctx context.Context, get *v1.HTTPGetAction, host string, port int) (Result, string, error) {
	target := URL(get, host, port)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return Unknown, "", fmt.Errorf("http get %s: %w", target, err)
	}
	req.Header.Set("User-Agent", h.userAgent)
	req.Header.Set("Accept", "*/*")
	for _, hdr := range get.HTTPHeaders {
		if strings.EqualFold(hdr.Name, "Host") {
			req.Host = hdr.Value
			continue
		}
		req.Header.Del(hdr.Name) // a pod's header replaces a default
	}
	for _, hdr := range get.HTTPHeaders {
		if !strings.EqualFold(hdr.Name, "Host") {
			req.Header.Add(hdr.Name, hdr.Value)
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return Failure, fmt.Sprintf("http get %s: %v", target, err), nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		return Failure, fmt.Sprintf("http get %s: HTTP %d: %s", target, resp.StatusCode, Clip(body)), nil
	}
	return Success, fmt.Sprintf("HTTP %d", resp.StatusCode), nil
}
