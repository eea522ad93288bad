package objects

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestCache(t *testing.T) {
	client := fake.NewClientset(
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": "v"}},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string][]byte{"k": []byte("v")}},
	)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	var calls int
	client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		calls++
		if calls > 2 {
			return true, nil, apierrors.NewServiceUnavailable("down")
		}
		return true, &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{
			Token:               "tok" + string(rune('0'+calls)),
			ExpirationTimestamp: metav1.NewTime(clk.Now().Add(time.Hour)),
		}}, nil
	})
	o := New(Config{Client: client, Clock: clk})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.Run(ctx)
	}()
	defer func() { cancel(); <-done }()

	if cm, err := o.GetConfigMap(ctx, "ns", "cm"); err != nil || cm.Data["k"] != "v" {
		t.Errorf("GetConfigMap = %v, %v", cm, err)
	}
	if s, err := o.GetSecret(ctx, "ns", "s"); err != nil || string(s.Data["k"]) != "v" {
		t.Errorf("GetSecret = %v, %v", s, err)
	}
	if _, err := o.GetSecret(ctx, "ns", "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("GetSecret of a missing secret: %v, want NotFound", err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"a"}}}
	tests := []struct {
		name  string
		step  time.Duration
		want  string
		calls int
	}{
		{name: "first request", want: "tok1", calls: 1},
		{name: "kept before 80% of its life", step: 40 * time.Minute, want: "tok1", calls: 1},
		{name: "renewed after 80%", step: 10 * time.Minute, want: "tok2", calls: 2},
		{name: "apiserver down: kept one handed out until it expires", step: 50 * time.Minute, want: "tok2", calls: 3},
	}
	for _, tt := range tests {
		clk.Step(tt.step)
		tr, err := o.GetServiceAccountToken(ctx, "ns", "default", req)
		if err != nil || tr.Status.Token != tt.want || calls != tt.calls {
			t.Errorf("%s: token %v err %v calls %d, want %s after %d calls", tt.name, tr, err, calls, tt.want, tt.calls)
		}
	}
	clk.Step(20 * time.Minute)
	if _, err := o.GetServiceAccountToken(ctx, "ns", "default", req); err == nil {
		t.Error("an expired token was handed out while the apiserver is down")
	}
}
