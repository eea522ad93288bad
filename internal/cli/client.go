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
)

// DefaultServer is where a local agent serves its read-only endpoints.
const DefaultServer = "http://127.0.0.1:10255"

// client talks to one agent.
type client struct {
	base string
	http *http.Client
}

func newClient(server string) *client {
	return &client{base: strings.TrimRight(server, "/"), http: &http.Client{}}
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
		return nil, fmt.Errorf("cannot reach minikubelet at %s (is it running? --server sets where): %w", c.base, err)
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
		return nil, fmt.Errorf("decode /pods of %s: %w", c.base, err)
	}
	return list.Items, nil
}
