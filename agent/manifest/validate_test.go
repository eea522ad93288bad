package manifest

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init", Image: "busybox"}},
			Containers: []v1.Container{{
				Name:  "app",
				Image: "nginx:1.27",
				Ports: []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}},
				Env:   []v1.EnvVar{{Name: "A", Value: "1"}},
			}},
		},
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1.Pod)
		want   []string
	}{
		{name: "valid", mutate: func(*v1.Pod) {}},
		{name: "valid with every optional field set", mutate: func(p *v1.Pod) {
			p.Namespace = "kube-system"
			p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
			g := int64(0)
			p.Spec.TerminationGracePeriodSeconds = &g
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports,
				v1.ContainerPort{ContainerPort: 65535, HostPort: 65535, Protocol: v1.ProtocolSCTP},
				v1.ContainerPort{ContainerPort: 53, Protocol: v1.ProtocolUDP},
				v1.ContainerPort{ContainerPort: 1}) // protocol left for Default
		}},
		{
			name:   "name missing",
			mutate: func(p *v1.Pod) { p.Name = "" },
			want:   []string{"metadata.name: Required value: name is required"},
		},
		{
			name:   "name not a DNS subdomain",
			mutate: func(p *v1.Pod) { p.Name = "Web_1" },
			want:   []string{`metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain`},
		},
		{
			name:   "namespace not a DNS label",
			mutate: func(p *v1.Pod) { p.Namespace = "kube.system" },
			want:   []string{`metadata.namespace: Invalid value: "kube.system": must not contain dots`},
		},
		{
			name:   "no containers",
			mutate: func(p *v1.Pod) { p.Spec.Containers = nil },
			want:   []string{"spec.containers: Required value: a pod needs at least one container"},
		},
		{
			name:   "container name missing",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Name = "" },
			want:   []string{"spec.containers[0].name: Required value"},
		},
		{
			name:   "init container name not a DNS label",
			mutate: func(p *v1.Pod) { p.Spec.InitContainers[0].Name = "Init" },
			want:   []string{`spec.initContainers[0].name: Invalid value: "Init": a lowercase RFC 1123 label`},
		},
		{
			name: "duplicate container name",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "app", Image: "x"})
			},
			want: []string{`spec.containers[1].name: Duplicate value: "app"`},
		},
		{
			name:   "container reuses an init container name",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Name = "init" },
			want:   []string{`spec.containers[0].name: Duplicate value: "init"`},
		},
		{
			name:   "image missing",
			mutate: func(p *v1.Pod) { p.Spec.InitContainers[0].Image = "" },
			want:   []string{"spec.initContainers[0].image: Required value: image is required"},
		},
		{
			name:   "image with whitespace",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx " },
			want:   []string{`spec.containers[0].image: Invalid value: "nginx ": must not have leading or trailing whitespace`},
		},
		{
			name:   "restart policy",
			mutate: func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			want:   []string{`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`},
		},
		{
			name: "negative grace period",
			mutate: func(p *v1.Pod) {
				g := int64(-1)
				p.Spec.TerminationGracePeriodSeconds = &g
			},
			want: []string{"spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0"},
		},
		{
			name:   "container port zero",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 },
			want:   []string{"spec.containers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive"},
		},
		{
			name:   "container port too large",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 65536 },
			want:   []string{"spec.containers[0].ports[0].containerPort: Invalid value: 65536: must be between 1 and 65535, inclusive"},
		},
		{
			name:   "host port negative",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = -1 },
			want:   []string{"spec.containers[0].ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive"},
		},
		{
			name:   "host port too large",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 70000 },
			want:   []string{"spec.containers[0].ports[0].hostPort: Invalid value: 70000"},
		},
		{
			name:   "protocol",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "tcp" },
			want:   []string{`spec.containers[0].ports[0].protocol: Unsupported value: "tcp": supported values: "TCP", "UDP", "SCTP"`},
		},
		{
			name:   "env name missing",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, v1.EnvVar{Value: "x"}) },
			want:   []string{"spec.containers[0].env[1].name: Required value"},
		},
		{
			name: "every problem is reported",
			mutate: func(p *v1.Pod) {
				p.Name = ""
				p.Spec.Containers[0].Image = ""
				p.Spec.RestartPolicy = "x"
			},
			want: []string{
				"metadata.name: Required value",
				"spec.containers[0].image: Required value",
				`spec.restartPolicy: Unsupported value: "x"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			before := pod.DeepCopy()
			errs := Validate(pod)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Validate = %q, want %d errors like %q", got, len(tt.want), tt.want)
			}
			for i := range tt.want {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], tt.want[i])
				}
			}
			if !equalPods(before, pod) {
				t.Errorf("Validate modified the pod")
			}
		})
	}
}

func equalPods(a, b *v1.Pod) bool {
	return hashPod(a) == hashPod(b)
}

func TestValidateReportsErrorsInOrder(t *testing.T) {
	pod := validPod()
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "app"}, v1.Container{Name: "app"})
	var got []string
	for _, e := range Validate(pod) {
		got = append(got, e.Error())
	}
	want := []string{
		"spec.containers[1].image: Required value: image is required",
		`spec.containers[1].name: Duplicate value: "app"`,
		"spec.containers[2].image: Required value: image is required",
		`spec.containers[2].name: Duplicate value: "app"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Validate = %q\nwant       %q", got, want)
	}
}
