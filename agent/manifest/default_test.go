package manifest

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func dumpJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func ptr[T any](v T) *T { return &v }

func TestDefault(t *testing.T) {
	tests := []struct {
		name string
		in   *v1.Pod
		want *v1.Pod
	}{
		{
			name: "empty fields are filled",
			in: &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: v1.PodSpec{
					Volumes:        []v1.Volume{{Name: "scratch"}},
					InitContainers: []v1.Container{{Name: "init", Image: "busybox@sha256:abc"}},
					Containers: []v1.Container{{
						Name:  "app",
						Image: "nginx",
						Ports: []v1.ContainerPort{{ContainerPort: 80}},
						Resources: v1.ResourceRequirements{
							Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
							Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
						},
						LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
						Lifecycle:     &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
					}},
				},
			},
			want: &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: v1.PodSpec{
					RestartPolicy:                 v1.RestartPolicyAlways,
					TerminationGracePeriodSeconds: ptr[int64](30),
					DNSPolicy:                     v1.DNSClusterFirst,
					SchedulerName:                 "default-scheduler",
					EnableServiceLinks:            ptr(true),
					SecurityContext:               &v1.PodSecurityContext{},
					Volumes:                       []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
					InitContainers: []v1.Container{{
						Name:                     "init",
						Image:                    "busybox@sha256:abc",
						ImagePullPolicy:          v1.PullIfNotPresent,
						TerminationMessagePath:   "/dev/termination-log",
						TerminationMessagePolicy: v1.TerminationMessageReadFile,
					}},
					Containers: []v1.Container{{
						Name:                     "app",
						Image:                    "nginx",
						ImagePullPolicy:          v1.PullAlways,
						TerminationMessagePath:   "/dev/termination-log",
						TerminationMessagePolicy: v1.TerminationMessageReadFile,
						Ports:                    []v1.ContainerPort{{ContainerPort: 80, Protocol: v1.ProtocolTCP}},
						Resources: v1.ResourceRequirements{
							Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
							Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("1Gi")},
						},
						LivenessProbe: &v1.Probe{
							ProbeHandler:     v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: v1.URISchemeHTTP}},
							TimeoutSeconds:   1,
							PeriodSeconds:    10,
							SuccessThreshold: 1,
							FailureThreshold: 3,
						},
						Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: v1.URISchemeHTTP}}},
					}},
				},
			},
		},
		{
			name: "set fields are kept",
			in: &v1.Pod{Spec: v1.PodSpec{
				RestartPolicy:                 v1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr[int64](0),
				DNSPolicy:                     v1.DNSDefault,
				SchedulerName:                 "mine",
				EnableServiceLinks:            ptr(false),
				SecurityContext:               &v1.PodSecurityContext{RunAsUser: ptr[int64](1000)},
				Containers: []v1.Container{{
					Name:                     "app",
					Image:                    "nginx",
					ImagePullPolicy:          v1.PullNever,
					TerminationMessagePath:   "/tmp/msg",
					TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
					Ports:                    []v1.ContainerPort{{ContainerPort: 53, Protocol: v1.ProtocolUDP}},
				}},
			}},
			want: &v1.Pod{Spec: v1.PodSpec{
				RestartPolicy:                 v1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr[int64](0),
				DNSPolicy:                     v1.DNSDefault,
				SchedulerName:                 "mine",
				EnableServiceLinks:            ptr(false),
				SecurityContext:               &v1.PodSecurityContext{RunAsUser: ptr[int64](1000)},
				Containers: []v1.Container{{
					Name:                     "app",
					Image:                    "nginx",
					ImagePullPolicy:          v1.PullNever,
					TerminationMessagePath:   "/tmp/msg",
					TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
					Ports:                    []v1.ContainerPort{{ContainerPort: 53, Protocol: v1.ProtocolUDP}},
				}},
			}},
		},
		{
			name: "host network copies container ports to host ports",
			in: &v1.Pod{Spec: v1.PodSpec{
				HostNetwork: true,
				Containers:  []v1.Container{{Name: "app", Image: "x:1", Ports: []v1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 81, HostPort: 81}}}},
			}},
			want: &v1.Pod{Spec: v1.PodSpec{
				HostNetwork:                   true,
				RestartPolicy:                 v1.RestartPolicyAlways,
				TerminationGracePeriodSeconds: ptr[int64](30),
				DNSPolicy:                     v1.DNSClusterFirst,
				SchedulerName:                 "default-scheduler",
				EnableServiceLinks:            ptr(true),
				SecurityContext:               &v1.PodSecurityContext{},
				Containers: []v1.Container{{
					Name:                     "app",
					Image:                    "x:1",
					ImagePullPolicy:          v1.PullIfNotPresent,
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: v1.TerminationMessageReadFile,
					Ports: []v1.ContainerPort{
						{ContainerPort: 80, HostPort: 80, Protocol: v1.ProtocolTCP},
						{ContainerPort: 81, HostPort: 81, Protocol: v1.ProtocolTCP},
					},
				}},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.DeepCopy()
			Default(got)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("Default =\n%s\nwant\n%s", dumpJSON(t, got), dumpJSON(t, tt.want))
			}
			again := got.DeepCopy()
			Default(again)
			if !equality.Semantic.DeepEqual(got, again) {
				t.Fatalf("Default is not idempotent:\n%s\nthen\n%s", dumpJSON(t, got), dumpJSON(t, again))
			}
		})
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  v1.PullPolicy
	}{
		{"nginx", v1.PullAlways},
		{"nginx:latest", v1.PullAlways},
		{"nginx:1.27", v1.PullIfNotPresent},
		{"docker.io/library/nginx", v1.PullAlways},
		{"localhost:5000/app", v1.PullAlways},
		{"localhost:5000/app:latest", v1.PullAlways},
		{"localhost:5000/app:v2", v1.PullIfNotPresent},
		{"localhost:5000/team/app", v1.PullAlways},
		{"nginx@sha256:0123456789abcdef", v1.PullIfNotPresent},
		{"localhost:5000/app@sha256:0123456789abcdef", v1.PullIfNotPresent},
		{"nginx:1.27@sha256:0123456789abcdef", v1.PullIfNotPresent},
		{"nginx:latest@sha256:0123456789abcdef", v1.PullAlways},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			if got := defaultPullPolicy(tt.image); got != tt.want {
				t.Fatalf("defaultPullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
			}
		})
	}
}

// An image volume's pullPolicy is defaulted as a container's, from its
// reference; one that is set stays.
func TestDefaultImageVolume(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Volumes: []v1.Volume{
		{Name: "latest", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "example.com/data"}}},
		{Name: "tagged", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "example.com/data:1"}}},
		{Name: "set", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "example.com/data", PullPolicy: v1.PullNever}}},
	}}}
	Default(pod)
	for i, want := range []v1.PullPolicy{v1.PullAlways, v1.PullIfNotPresent, v1.PullNever} {
		if got := pod.Spec.Volumes[i].Image.PullPolicy; got != want {
			t.Errorf("volume %s: pullPolicy %q, want %q", pod.Spec.Volumes[i].Name, got, want)
		}
	}
}
