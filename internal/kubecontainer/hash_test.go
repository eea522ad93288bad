package kubecontainer

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func baseContainer() v1.Container {
	return v1.Container{
		Name:                     "app",
		Image:                    "nginx:1",
		Command:                  []string{"nginx"},
		Args:                     []string{"-g", "daemon off;"},
		Env:                      []v1.EnvVar{{Name: "A", Value: "1"}},
		Ports:                    []v1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: v1.ProtocolTCP}},
		ImagePullPolicy:          v1.PullIfNotPresent,
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: v1.TerminationMessageReadFile,
	}
}

func basePod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyAlways,
			DNSPolicy:     v1.DNSClusterFirst,
			Containers: []v1.Container{
				baseContainer(),
				{Name: "sidecar", Image: "busybox:1", Command: []string{"sleep", "inf"}},
			},
		},
	}
}

func TestHashContainer(t *testing.T) {
	base := baseContainer()
	baseHash := HashContainer(&base)
	if again := baseContainer(); HashContainer(&again) != baseHash {
		t.Fatalf("HashContainer is not deterministic: %s != %s", HashContainer(&again), baseHash)
	}
	tests := []struct {
		name   string
		mutate func(c *v1.Container)
	}{
		{"image", func(c *v1.Container) { c.Image = "nginx:2" }},
		{"command", func(c *v1.Container) { c.Command = []string{"nginx", "-q"} }},
		{"args", func(c *v1.Container) { c.Args = nil }},
		{"env value", func(c *v1.Container) { c.Env[0].Value = "2" }},
		{"env added", func(c *v1.Container) { c.Env = append(c.Env, v1.EnvVar{Name: "B", Value: "1"}) }},
		{"working dir", func(c *v1.Container) { c.WorkingDir = "/srv" }},
		{"port", func(c *v1.Container) { c.Ports[0].ContainerPort = 8080 }},
		{"host port", func(c *v1.Container) { c.Ports[0].HostPort = 8080 }},
		{"pull policy", func(c *v1.Container) { c.ImagePullPolicy = v1.PullAlways }},
		{"tty", func(c *v1.Container) { c.TTY = true }},
		{"stdin", func(c *v1.Container) { c.Stdin = true }},
		{"termination message policy", func(c *v1.Container) {
			c.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
		}},
		{"security context", func(c *v1.Container) {
			priv := true
			c.SecurityContext = &v1.SecurityContext{Privileged: &priv}
		}},
		{"volume mount", func(c *v1.Container) {
			c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}},
		{"liveness probe", func(c *v1.Container) {
			c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
		}},
		{"name", func(c *v1.Container) { c.Name = "app2" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := baseContainer()
			tt.mutate(&c)
			if got := HashContainer(&c); got == baseHash {
				t.Errorf("hash unchanged (%s) after changing %s", got, tt.name)
			}
		})
	}

	// A resize is no spec change: it is made in place, or by a restart
	// its resizePolicy asks for.
	for name, mutate := range map[string]func(c *v1.Container){
		"resources": func(c *v1.Container) {
			c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
		},
		"resize policy": func(c *v1.Container) {
			c.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.RestartContainer}}
		},
	} {
		t.Run(name+" (unchanged)", func(t *testing.T) {
			c := baseContainer()
			mutate(&c)
			if got := HashContainer(&c); got != baseHash {
				t.Errorf("hash changed (%s -> %s) after changing %s", baseHash, got, name)
			}
		})
	}

	t.Run("other container's edit", func(t *testing.T) {
		pod := basePod()
		before := HashContainer(&pod.Spec.Containers[0])
		pod.Spec.Containers[1].Command = []string{"sleep", "1"}
		pod.Spec.Containers[1].Image = "busybox:2"
		if after := HashContainer(&pod.Spec.Containers[0]); after != before {
			t.Errorf("hash of app changed from %s to %s after editing sidecar", before, after)
		}
	})
}

func TestHashSandbox(t *testing.T) {
	baseHash := HashSandbox(basePod())
	if again := HashSandbox(basePod()); again != baseHash {
		t.Fatalf("HashSandbox is not deterministic: %s != %s", again, baseHash)
	}
	tests := []struct {
		name    string
		mutate  func(p *v1.Pod)
		changes bool
	}{
		{"container command", func(p *v1.Pod) { p.Spec.Containers[0].Command = []string{"sh"} }, false},
		{"container image", func(p *v1.Pod) { p.Spec.Containers[1].Image = "busybox:2" }, false},
		{"container env", func(p *v1.Pod) { p.Spec.Containers[0].Env = nil }, false},
		{"container port without host port", func(p *v1.Pod) {
			p.Spec.Containers[1].Ports = []v1.ContainerPort{{ContainerPort: 9090}}
		}, false},
		{"container added", func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "third", Image: "x"})
		}, false},
		{"pod labels", func(p *v1.Pod) { p.Labels = map[string]string{"a": "b"} }, false},
		{"restart policy", func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever }, false},
		{"hostNetwork", func(p *v1.Pod) { p.Spec.HostNetwork = true }, true},
		{"hostPID", func(p *v1.Pod) { p.Spec.HostPID = true }, true},
		{"hostIPC", func(p *v1.Pod) { p.Spec.HostIPC = true }, true},
		{"hostname", func(p *v1.Pod) { p.Spec.Hostname = "h" }, true},
		{"dns policy", func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSDefault }, true},
		{"pod security context", func(p *v1.Pod) {
			uid := int64(1000)
			p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: &uid}
		}, true},
		{"host port added", func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 8080 }, true},
		{"host port on other container", func(p *v1.Pod) {
			p.Spec.Containers[1].Ports = []v1.ContainerPort{{ContainerPort: 9090, HostPort: 9090}}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := basePod()
			tt.mutate(p)
			got := HashSandbox(p)
			if changed := got != baseHash; changed != tt.changes {
				t.Errorf("sandbox hash changed = %v, want %v (base %s, got %s)", changed, tt.changes, baseHash, got)
			}
		})
	}

	t.Run("host port changed", func(t *testing.T) {
		p := basePod()
		p.Spec.Containers[0].Ports[0].HostPort = 8080
		h1 := HashSandbox(p)
		p.Spec.Containers[0].Ports[0].HostPort = 8081
		if h2 := HashSandbox(p); h1 == h2 {
			t.Errorf("sandbox hash unchanged (%s) after changing host port 8080 -> 8081", h1)
		}
	})
}

// A container turning privileged needs a privileged sandbox, so the
// sandbox hash changes; an unprivileged pod's hash is what it was before
// the field existed.
func TestHashSandboxPrivileged(t *testing.T) {
	yes := true
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	before := HashSandbox(pod)
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: &yes}
	if HashSandbox(pod) == before {
		t.Error("a privileged container did not change the sandbox hash")
	}
	no := false
	pod.Spec.Containers[0].SecurityContext.Privileged = &no
	if HashSandbox(pod) != before {
		t.Error("privileged: false changed the sandbox hash")
	}
}

// A container made by an agent that hashed the whole container, resources
// included, still matches its spec given the resources it was made with,
// and no longer does once the rest of its spec changed.
func TestMatchesSpecLegacyHash(t *testing.T) {
	c := baseContainer()
	c.Resources = v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}}
	legacy := hashJSON(&c)
	created := c.Resources.DeepCopy()
	if !MatchesSpec(HashContainer(&c), &c, nil) {
		t.Error("HashContainer's own hash does not match")
	}
	if !MatchesSpec(legacy, &c, created) {
		t.Error("the legacy hash does not match with the resources the container was made with")
	}
	if MatchesSpec(legacy, &c, nil) {
		t.Error("the legacy hash matched without the resources the container was made with")
	}
	// Resized since: the legacy hash still matches with the old resources.
	resized := c
	resized.Resources = v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}
	if !MatchesSpec(legacy, &resized, created) {
		t.Error("a resize made the legacy hash stop matching")
	}
	edited := c
	edited.Image = "nginx:2"
	if MatchesSpec(legacy, &edited, created) || MatchesSpec(HashContainer(&c), &edited, created) {
		t.Error("an edited image still matches")
	}
}
