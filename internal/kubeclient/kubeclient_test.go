package kubeclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// request is what the fake apiserver saw of one call.
type request struct {
	method, path, accept, contentType, body string
}

// apiserver answers every request with reply (JSON) and records it.
func apiserver(t *testing.T, reply any) (*rest.Config, func() []request) {
	t.Helper()
	var mu sync.Mutex
	var seen []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, request{r.Method, r.URL.Path + "?" + r.URL.RawQuery, r.Header.Get("Accept"), r.Header.Get("Content-Type"), string(b)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply)
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}, func() []request {
		mu.Lock()
		defer mu.Unlock()
		return append([]request(nil), seen...)
	}
}

// Each typed client reaches its resource's path in its API group, and
// the core resources ask for protobuf first, as client-go's clientset
// does; the answer decodes into the typed object.
func TestClientsPathsAndDecoding(t *testing.T) {
	cfg, seen := apiserver(t, &v1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns1"}})
	cs, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod, err := cs.Pods("ns1").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || pod.Name != "web" || pod.Namespace != "ns1" {
		t.Fatalf("Get pod = %+v, %v", pod.ObjectMeta, err)
	}
	if _, err := cs.Pods("ns1").Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"status":{}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		call func() error
		want string
	}{
		{func() error { _, err := cs.Nodes().Get(ctx, "n1", metav1.GetOptions{}); return err }, "GET /api/v1/nodes/n1"},
		{func() error { _, err := cs.Leases("kube-node-lease").Get(ctx, "n1", metav1.GetOptions{}); return err }, "GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1"},
		{func() error {
			_, err := cs.CertificateSigningRequests().Get(ctx, "csr-1", metav1.GetOptions{})
			return err
		}, "GET /apis/certificates.k8s.io/v1/certificatesigningrequests/csr-1"},
		{func() error { _, err := cs.RuntimeClasses().Get(ctx, "gvisor", metav1.GetOptions{}); return err }, "GET /apis/node.k8s.io/v1/runtimeclasses/gvisor"},
		{func() error {
			_, err := cs.TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{})
			return err
		}, "POST /apis/authentication.k8s.io/v1/tokenreviews"},
		{func() error {
			_, err := cs.ServiceAccounts("ns1").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			return err
		}, "POST /api/v1/namespaces/ns1/serviceaccounts/default/token"},
		{func() error {
			_, err := EventSink(ctx, cs).Create(&v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "ns2"}})
			return err
		}, "POST /api/v1/namespaces/ns2/events"},
	}
	for _, c := range cases {
		// The answer is a Pod whatever was asked: decoding into another
		// type may fail; the path is what is checked here.
		_ = c.call()
	}
	got := seen()
	if len(got) != 2+len(cases) {
		t.Fatalf("%d requests, want %d: %+v", len(got), 2+len(cases), got)
	}
	if got[0].method+" "+got[0].path != "GET /api/v1/namespaces/ns1/pods/web?" || !strings.HasPrefix(got[0].accept, "application/vnd.kubernetes.protobuf") {
		t.Errorf("get pod: %+v", got[0])
	}
	if got[1].method != "PATCH" || got[1].path != "/api/v1/namespaces/ns1/pods/web/status?" || got[1].contentType != string(types.StrategicMergePatchType) {
		t.Errorf("patch pod status: %+v", got[1])
	}
	for i, c := range cases {
		r := got[2+i]
		if p, _, _ := strings.Cut(r.path, "?"); r.method+" "+p != c.want {
			t.Errorf("request %d = %s %s, want %s", i, r.method, r.path, c.want)
		}
	}
}

// The scheme holds the agent's groups and no other.
func TestSchemeOnlyTheAgentsGroups(t *testing.T) {
	cfg, _ := apiserver(t, struct{}{})
	cs, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]bool{}
	for gvk := range cs.Scheme().AllKnownTypes() {
		groups[gvk.Group] = true
	}
	for _, g := range []string{"", "coordination.k8s.io", "certificates.k8s.io", "authentication.k8s.io", "authorization.k8s.io", "node.k8s.io"} {
		if !groups[g] {
			t.Errorf("group %q missing", g)
		}
		delete(groups, g)
	}
	if len(groups) != 0 {
		t.Errorf("groups the agent does not use: %v", groups)
	}
}
