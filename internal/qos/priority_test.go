package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestPriority(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec     v1.PodSpec
		want     int32
		critical bool
	}{
		{"none", v1.PodSpec{}, 0, false},
		{"value", v1.PodSpec{Priority: ptr.To[int32](1000)}, 1000, false},
		{"critical value", v1.PodSpec{Priority: ptr.To[int32](2000000000)}, 2000000000, true},
		{"node class, static", v1.PodSpec{PriorityClassName: "system-node-critical"}, 2000001000, true},
		{"cluster class, static", v1.PodSpec{PriorityClassName: "system-cluster-critical"}, 2000000000, true},
		{"other class, static", v1.PodSpec{PriorityClassName: "high"}, 0, false},
		// The API server's resolution wins over the name.
		{"resolved class", v1.PodSpec{PriorityClassName: "system-node-critical", Priority: ptr.To[int32](5)}, 5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tc.spec}
			if got := Priority(pod); got != tc.want {
				t.Errorf("Priority = %d, want %d", got, tc.want)
			}
			if got := IsCriticalPriority(pod); got != tc.critical {
				t.Errorf("IsCriticalPriority = %v, want %v", got, tc.critical)
			}
		})
	}
}
