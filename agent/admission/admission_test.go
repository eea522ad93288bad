package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pods(n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	}
	return out
}

// The first refusal of the chain is its answer; handlers after it are not
// asked.
func TestChainFirstRefusalWins(t *testing.T) {
	var asked []string
	handler := func(name string, r Result) Handler {
		return func(*v1.Pod, []*v1.Pod) Result {
			asked = append(asked, name)
			return r
		}
	}
	c := Chain{
		handler("ok", Admitted),
		handler("first", Result{Reason: "First", Message: "one"}),
		handler("second", Result{Reason: "Second", Message: "two"}),
	}
	if r := c.Admit(&v1.Pod{}, nil); r.Admit || r.Reason != "First" || r.Message != "one" {
		t.Errorf("Admit = %+v, want the first refusal", r)
	}
	if len(asked) != 2 {
		t.Errorf("asked %v, want ok and first only", asked)
	}
	if r := (Chain{}).Admit(&v1.Pod{}, nil); !r.Admit {
		t.Errorf("empty chain refused: %+v", r)
	}
}

// MaxPods admits up to max pods and refuses the next with the kubelet's
// reason and message.
func TestMaxPods(t *testing.T) {
	h := MaxPods(2)
	for others, want := range []bool{true, true, false, false} {
		r := h(&v1.Pod{}, pods(others))
		if r.Admit != want {
			t.Errorf("with %d others: admit %v, want %v", others, r.Admit, want)
		}
	}
	r := h(&v1.Pod{}, pods(3))
	if want := "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 2"; r.Reason != "OutOfpods" || r.Message != want {
		t.Errorf("refusal = %q %q, want OutOfpods %q", r.Reason, r.Message, want)
	}
}
