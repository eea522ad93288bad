package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/internal/localsock"
)

// The command line reaches the agent through its socket, whatever the
// URL's host, and says where it looked when nothing answers there.
func TestClientOverSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "clisock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "mk.sock")
	ln, err := localsock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(&v1.PodList{Items: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "web-n1", Namespace: "default"}}}})
	})
	srv := &http.Server{Handler: localsock.RootOnly(mux), ConnContext: localsock.ConnContext}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	pods, err := newClient(unixScheme + path).pods(context.Background())
	if err != nil || len(pods) != 1 || pods[0].Name != "web-n1" {
		t.Fatalf("pods over the socket = %v, %v; want web-n1", pods, err)
	}
	missing := unixScheme + filepath.Join(dir, "none.sock")
	if _, err := newClient(missing).pods(context.Background()); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("pods with no agent: %v; want an error naming %s", err, missing)
	}
}
