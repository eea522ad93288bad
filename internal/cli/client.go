package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/localsock"
)

// DefaultServer is where a local agent serves its endpoints to root: its
// Unix socket (--socket).
const DefaultServer = unixScheme + localsock.DefaultPath

// unixScheme starts a --server that is a Unix socket's path.
const unixScheme = "unix://"

// serverUsage is the --server flag's help.
const serverUsage = "the agent: unix://PATH of its local socket (root only), or the URL of its read-only port"

// client talks to one agent.
type client struct {
	// name is the agent in messages; base prefixes the paths.
	name string
	base string
	http *http.Client
}

// newClient talks to server: a unix:// socket path or an http(s) URL.
func newClient(server string) *client {
	if path, ok := strings.CutPrefix(server, unixScheme); ok {
		return &client{name: server, base: "http://minikubelet", http: &http.Client{Transport: localsock.Transport(path)}}
	}
	base := strings.TrimRight(server, "/")
	return &client{name: base, base: base, http: &http.Client{}}
}

// get returns the body of a successful GET; an error names the agent and
// what it answered.
func (c *client) get(ctx context.Context, path string, query url.Values) (io.ReadCloser, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach minikubelet at %s (is it running? are you root? --server sets where): %w", c.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("%s", strings.TrimSpace(string(b)))
	}
	return resp.Body, nil
}

func (c *client) pods(ctx context.Context) ([]v1.Pod, error) {
	body, err := c.get(ctx, "/pods", nil)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var list v1.PodList
	if err := json.NewDecoder(body).Decode(&list); err != nil {
		return nil, fmt.Errorf("decode /pods of %s: %w", c.name, err)
	}
	return list.Items, nil
}
