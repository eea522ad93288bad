package podworkers

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/downward"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

func envMap(kvs []*runtimeapi.KeyValue) []string {
	out := []string{}
	for _, kv := range kvs {
		out = append(out, kv.Key+"="+string(kv.Value))
	}
	return out
}

func TestContainerConfig(t *testing.T) {
	grace := int64(45)
	pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
		p.Labels = map[string]string{"tier": "front"}
		p.Spec.TerminationGracePeriodSeconds = &grace
		c := &p.Spec.Containers[0]
		c.Command = []string{"/bin/$(CMD)"}
		c.Args = []string{"--greet=$(GREETING)", "$$(GREETING)", "$(UNKNOWN)"}
		c.Env = []v1.EnvVar{{Name: "CMD", Value: "serve"}, {Name: "GREETING", Value: "hi $(CMD)"}}
		c.WorkingDir = "/srv"
		c.TTY = true
		c.Stdin = true
		c.TerminationMessagePath = "/dev/termination-log"
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	})
	c := &pod.Spec.Containers[0]
	cfg, err := containerConfig(pod, c, containerOpts{RestartCount: 3, ImageRef: "sha256:ref", Env: podEnv{Downward: downward.Resolver{NodeName: "node1"}}})
	if err != nil {
		t.Fatalf("containerConfig: %v", err)
	}
	if cfg.Metadata.GetName() != "app" || cfg.Metadata.GetAttempt() != 3 {
		t.Errorf("metadata = %v, want app attempt 3", cfg.Metadata)
	}
	if cfg.Image.GetImage() != "sha256:ref" || cfg.Image.GetUserSpecifiedImage() != "img-app" {
		t.Errorf("image = %v, want sha256:ref as specified by img-app", cfg.Image)
	}
	wantLabels := map[string]string{
		kubecontainer.LabelPodName:       "web",
		kubecontainer.LabelPodNamespace:  "ns",
		kubecontainer.LabelPodUID:        "uid-web",
		kubecontainer.LabelContainerName: "app",
	}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v (pod labels stay on the sandbox)", cfg.Labels, wantLabels)
	}
	wantAnnotations := map[string]string{
		kubecontainer.AnnotationContainerHash:            kubecontainer.HashContainer(c),
		kubecontainer.AnnotationRestartCount:             "3",
		kubecontainer.AnnotationTerminationMessagePath:   "/dev/termination-log",
		kubecontainer.AnnotationTerminationMessagePolicy: "File",
		kubecontainer.AnnotationPodTerminationGrace:      "45",
	}
	if !reflect.DeepEqual(cfg.Annotations, wantAnnotations) {
		t.Errorf("annotations = %v\nwant %v", cfg.Annotations, wantAnnotations)
	}
	if cfg.LogPath != "app/3.log" {
		t.Errorf("LogPath = %q, want app/3.log", cfg.LogPath)
	}
	if got, want := envMap(cfg.Envs), []string{"CMD=serve", "GREETING=hi serve"}; !reflect.DeepEqual(got, want) {
		t.Errorf("env = %v, want %v", got, want)
	}
	if want := []string{"/bin/serve"}; !reflect.DeepEqual(cfg.Command, want) {
		t.Errorf("command = %q, want %q", cfg.Command, want)
	}
	if want := []string{"--greet=hi serve", "$(GREETING)", "$(UNKNOWN)"}; !reflect.DeepEqual(cfg.Args, want) {
		t.Errorf("args = %q, want %q", cfg.Args, want)
	}
	if cfg.WorkingDir != "/srv" || !cfg.Tty || !cfg.Stdin || cfg.StdinOnce {
		t.Errorf("workingDir/tty/stdin/stdinOnce = %q/%v/%v/%v", cfg.WorkingDir, cfg.Tty, cfg.Stdin, cfg.StdinOnce)
	}
	if ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns.GetNetwork() != runtimeapi.NamespaceMode_POD || ns.GetPid() != runtimeapi.NamespaceMode_CONTAINER {
		t.Errorf("namespace options = %v", ns)
	}

	// The hash annotation is what the sync compares against.
	cs := kubecontainer.FromCRIStatus(&runtimeapi.ContainerStatus{Annotations: cfg.Annotations}, "")
	if cs.Hash != kubecontainer.HashContainer(c) || cs.RestartCount != 3 {
		t.Errorf("annotations read back as hash %q restartCount %d", cs.Hash, cs.RestartCount)
	}
}

func TestContainerConfigDefaultGrace(t *testing.T) {
	pod := newPod("web", []string{"app"})
	cfg, err := containerConfig(pod, &pod.Spec.Containers[0], containerOpts{ImageRef: "img-app"})
	if err != nil {
		t.Fatalf("containerConfig: %v", err)
	}
	if got := cfg.Annotations[kubecontainer.AnnotationPodTerminationGrace]; got != "30" {
		t.Errorf("grace annotation = %q, want 30", got)
	}
	if cfg.LogPath != "app/0.log" || cfg.Command != nil || cfg.Args != nil {
		t.Errorf("LogPath %q, command %q, args %q", cfg.LogPath, cfg.Command, cfg.Args)
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "B": "b$(A)", "EMPTY": ""}
	tests := []struct {
		in, want string
	}{
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(A)z", "xayaz"},
		{"$(B)", "b$(A)"}, // values are not expanded twice
		{"$(EMPTY)|", "|"},
		{"$$", "$"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$a"},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$(UNKNOWN)$(A)", "$(UNKNOWN)a"},
		{"$(A", "$(A"},
		{"$", "$"},
		{"a$", "a$"},
		{"$A", "$A"},
		{"$()", "$()"},
		{"100$", "100$"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := expand(tt.in, vars); got != tt.want {
				t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestMakeEnv(t *testing.T) {
	pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
		p.Labels = map[string]string{"tier": "front"}
		p.Annotations = map[string]string{"note": "x"}
		p.Spec.ServiceAccountName = "sa"
	})
	fieldRef := func(path string) *v1.EnvVarSource {
		return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}
	}
	penv := podEnv{Downward: downward.Resolver{NodeName: "node1", HostIP: "192.0.2.1"}, PodIPs: []string{"10.1.2.3", "fd00::3"}}
	tests := []struct {
		name    string
		pod     *v1.Pod
		penv    podEnv
		env     []v1.EnvVar
		want    []string
		wantErr bool
	}{
		{
			name: "order kept, earlier names expand, later ones do not",
			env: []v1.EnvVar{
				{Name: "Z", Value: "$(A)"},
				{Name: "A", Value: "1"},
				{Name: "B", Value: "$(A)$(A)"},
				{Name: "C", Value: "$$(A)"},
			},
			want: []string{"Z=$(A)", "A=1", "B=11", "C=$(A)"},
		},
		{
			name: "fieldRefs",
			env: []v1.EnvVar{
				{Name: "NAME", ValueFrom: fieldRef("metadata.name")},
				{Name: "NS", ValueFrom: fieldRef("metadata.namespace")},
				{Name: "UID", ValueFrom: fieldRef("metadata.uid")},
				{Name: "NODE", ValueFrom: fieldRef("spec.nodeName")},
				{Name: "SA", ValueFrom: fieldRef("spec.serviceAccountName")},
				{Name: "HOST_IP", ValueFrom: fieldRef("status.hostIP")},
				{Name: "POD_IP", ValueFrom: fieldRef("status.podIP")},
				{Name: "POD_IPS", ValueFrom: fieldRef("status.podIPs")},
				{Name: "TIER", ValueFrom: fieldRef("metadata.labels['tier']")},
				{Name: "NOTE", ValueFrom: fieldRef("metadata.annotations['note']")},
				{Name: "MISSING", ValueFrom: fieldRef("metadata.labels['nope']")},
				{Name: "REF", Value: "$(NAME).$(NS)"},
			},
			want: []string{
				"NAME=web", "NS=ns", "UID=uid-web", "NODE=node1", "SA=sa", "HOST_IP=192.0.2.1",
				"POD_IP=10.1.2.3", "POD_IPS=10.1.2.3,fd00::3", "TIER=front", "NOTE=x", "MISSING=", "REF=web.ns",
			},
		},
		{
			name: "host network pod's IP is the host's",
			pod:  newPod("web", []string{"app"}, withHostNetwork()),
			env: []v1.EnvVar{
				{Name: "POD_IP", ValueFrom: fieldRef("status.podIP")},
				{Name: "POD_IPS", ValueFrom: fieldRef("status.podIPs")},
			},
			want: []string{"POD_IP=192.0.2.1", "POD_IPS=192.0.2.1"},
		},
		{
			name: "no pod IP yet",
			penv: podEnv{Downward: downward.Resolver{NodeName: "node1"}},
			env:  []v1.EnvVar{{Name: "POD_IP", ValueFrom: fieldRef("status.podIP")}},
			want: []string{"POD_IP="},
		},
		{
			name:    "unsupported fieldRef",
			env:     []v1.EnvVar{{Name: "X", ValueFrom: fieldRef("spec.priority")}},
			wantErr: true,
		},
		{
			name: "secretKeyRef",
			env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "k",
			}}}},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.pod
			if p == nil {
				p = pod
			}
			pe := tt.penv
			if pe.Downward.NodeName == "" {
				pe = penv
			}
			c := p.Spec.Containers[0].DeepCopy()
			c.Env = tt.env
			got, err := makeEnv(p, c, pe)
			if tt.wantErr {
				var ce *configError
				if !errors.As(err, &ce) {
					t.Fatalf("err = %v, want a configError", err)
				}
				if !strings.Contains(err.Error(), `"app"`) || !strings.Contains(err.Error(), "X") {
					t.Errorf("error %q does not name the container and the variable", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("makeEnv: %v", err)
			}
			if g := envMap(got); !reflect.DeepEqual(g, tt.want) {
				t.Errorf("env = %v\nwant %v", g, tt.want)
			}
		})
	}
}

// An env resourceFieldRef, which validation accepts, is resolved (it was
// once refused at runtime with CreateContainerConfigError): without a
// containerName it reads the container's own resources, with one another
// container's; a limit that is not set reads as the node's allocatable.
func TestMakeEnvResourceFieldRef(t *testing.T) {
	pod := newPod("web", []string{"app", "other"}, func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")}
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}
	})
	ref := func(container, res, divisor string) *v1.EnvVarSource {
		return &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: container, Resource: res, Divisor: resource.MustParse(divisor)}}
	}
	penv := podEnv{Downward: downward.Resolver{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")}}}
	app, other := &pod.Spec.Containers[0], &pod.Spec.Containers[1]
	app.Env = []v1.EnvVar{
		{Name: "CPU", ValueFrom: ref("", "limits.cpu", "1")},
		{Name: "CPU_M", ValueFrom: ref("", "requests.cpu", "1m")},
		{Name: "MEM_MI", ValueFrom: ref("", "limits.memory", "1Mi")},
		{Name: "OTHER_MEM_GI", ValueFrom: ref("other", "limits.memory", "1Gi")},
	}
	other.Env = []v1.EnvVar{
		{Name: "CPU", ValueFrom: ref("", "limits.cpu", "1m")},
		{Name: "APP_CPU_M", ValueFrom: ref("app", "limits.cpu", "1m")},
	}
	for _, tt := range []struct {
		c    *v1.Container
		want []string
	}{
		{app, []string{"CPU=1", "CPU_M=100", "MEM_MI=64", "OTHER_MEM_GI=8"}},
		{other, []string{"CPU=4000", "APP_CPU_M=250"}},
	} {
		got, err := makeEnv(pod, tt.c, penv)
		if err != nil {
			t.Fatalf("makeEnv(%s): %v", tt.c.Name, err)
		}
		if g := envMap(got); !reflect.DeepEqual(g, tt.want) {
			t.Errorf("env of %s = %v\nwant %v", tt.c.Name, g, tt.want)
		}
	}
}

// status.hostIPs is one of the fieldRefs the API accepts for env (the
// kubelet resolves it to the node's IPs, comma separated).
func TestMakeEnvHostIPs(t *testing.T) {
	pod := newPod("web", []string{"app"})
	c := &pod.Spec.Containers[0]
	c.Env = []v1.EnvVar{{Name: "HOST_IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIPs"}}}}
	got, err := makeEnv(pod, c, podEnv{Downward: downward.Resolver{HostIP: "192.0.2.1"}})
	if err != nil {
		t.Fatalf("makeEnv: %v (a valid pod would fail with CreateContainerConfigError)", err)
	}
	if g := envMap(got); !reflect.DeepEqual(g, []string{"HOST_IPS=192.0.2.1"}) {
		t.Errorf("env = %v, want HOST_IPS=192.0.2.1", g)
	}
}

// The API accepts a name defined twice; the kubelet passes one variable with
// the last value. Passing both makes the process see the first one (glibc's
// getenv returns the first match; containerd appends both).
func TestMakeEnvDuplicateNames(t *testing.T) {
	pod := newPod("web", []string{"app"})
	c := &pod.Spec.Containers[0]
	c.Env = []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2$(A)"}, {Name: "B", Value: "$(A)"}}
	got, err := makeEnv(pod, c, podEnv{})
	if err != nil {
		t.Fatalf("makeEnv: %v", err)
	}
	var as []string
	for _, kv := range got {
		if kv.Key == "A" {
			as = append(as, string(kv.Value))
		}
		if kv.Key == "B" && string(kv.Value) != "21" {
			t.Errorf("B = %q, want 21", kv.Value)
		}
	}
	if !reflect.DeepEqual(as, []string{"21"}) {
		t.Errorf("values passed for A = %q, want only [21] as the kubelet does (env: %v)", as, envMap(got))
	}
}

func TestContainerConfigEnvFrom(t *testing.T) {
	pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
		p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}
	})
	_, err := containerConfig(pod, &pod.Spec.Containers[0], containerOpts{ImageRef: "img"})
	var ce *configError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a configError", err)
	}
	if !strings.Contains(err.Error(), "envFrom") {
		t.Errorf("error %q does not name envFrom", err)
	}
}

func TestSandboxConfig(t *testing.T) {
	s := NewSyncer(SyncerConfig{PodLogsDir: "/var/log/pods"})
	uid := int64(1000)
	share := true
	longName := strings.Repeat("a", 60) + "-.-bbbbbbbb"
	tests := []struct {
		name   string
		pod    *v1.Pod
		check  func(t *testing.T, cfg *runtimeapi.PodSandboxConfig)
		wantNS *runtimeapi.NamespaceOption
	}{
		{
			name: "pod network",
			pod: newPod("web", []string{"app", "side"}, func(p *v1.Pod) {
				p.Labels = map[string]string{"tier": "front", kubecontainer.LabelPodName: "spoof"}
				p.Annotations = map[string]string{"note": "x"}
				p.Spec.Containers[0].Ports = []v1.ContainerPort{
					{ContainerPort: 80},
					{ContainerPort: 443, HostPort: 8443, HostIP: "127.0.0.1"},
				}
				p.Spec.Containers[1].Ports = []v1.ContainerPort{
					{ContainerPort: 53, HostPort: 5353, Protocol: v1.ProtocolUDP},
					{ContainerPort: 9, HostPort: 9, Protocol: v1.ProtocolSCTP},
				}
			}),
			wantNS: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
			check: func(t *testing.T, cfg *runtimeapi.PodSandboxConfig) {
				wantLabels := map[string]string{
					"tier":                          "front",
					kubecontainer.LabelPodName:      "web",
					kubecontainer.LabelPodNamespace: "ns",
					kubecontainer.LabelPodUID:       "uid-web",
				}
				if !reflect.DeepEqual(cfg.Labels, wantLabels) {
					t.Errorf("labels = %v, want %v", cfg.Labels, wantLabels)
				}
				if cfg.Hostname != "web" {
					t.Errorf("hostname = %q, want web", cfg.Hostname)
				}
				want := []*runtimeapi.PortMapping{
					{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 443, HostPort: 8443, HostIp: "127.0.0.1"},
					{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 5353},
					{Protocol: runtimeapi.Protocol_SCTP, ContainerPort: 9, HostPort: 9},
				}
				if len(cfg.PortMappings) != len(want) {
					t.Fatalf("port mappings = %v, want %v", cfg.PortMappings, want)
				}
				for i := range want {
					if cfg.PortMappings[i].String() != want[i].String() {
						t.Errorf("port mapping %d = %v, want %v", i, cfg.PortMappings[i], want[i])
					}
				}
				if cfg.Annotations["note"] != "x" {
					t.Errorf("pod annotation lost: %v", cfg.Annotations)
				}
			},
		},
		{
			name:   "host network",
			pod:    newPod("web", []string{"app"}, withHostNetwork()),
			wantNS: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
			check: func(t *testing.T, cfg *runtimeapi.PodSandboxConfig) {
				if cfg.Hostname != "" {
					t.Errorf("hostname = %q, want none for a host-network sandbox", cfg.Hostname)
				}
				if len(cfg.PortMappings) != 0 {
					t.Errorf("port mappings = %v, want none", cfg.PortMappings)
				}
			},
		},
		{
			name: "host PID and IPC, security context, hostname",
			pod: newPod("web", []string{"app"}, func(p *v1.Pod) {
				p.Spec.HostPID = true
				p.Spec.HostIPC = true
				p.Spec.Hostname = "custom"
				p.Spec.SecurityContext = &v1.PodSecurityContext{
					RunAsUser:          &uid,
					SupplementalGroups: []int64{5},
					Sysctls:            []v1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}, {Name: "net/ipv4/conf/eth0.100/rp_filter", Value: "2"}},
				}
			}),
			wantNS: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE},
			check: func(t *testing.T, cfg *runtimeapi.PodSandboxConfig) {
				if cfg.Hostname != "custom" {
					t.Errorf("hostname = %q, want custom", cfg.Hostname)
				}
				sc := cfg.GetLinux().GetSecurityContext()
				if sc.GetRunAsUser().GetValue() != 1000 || sc.GetRunAsGroup() != nil || !reflect.DeepEqual(sc.GetSupplementalGroups(), []int64{5}) {
					t.Errorf("security context = %v", sc)
				}
				if got := cfg.GetLinux().GetSysctls(); len(got) != 2 || got["net.core.somaxconn"] != "1024" || got["net.ipv4.conf.eth0/100.rp_filter"] != "2" {
					t.Errorf("sysctls = %v", got)
				}
			},
		},
		{
			name: "shared process namespace, long name",
			pod: newPod(longName, []string{"app"}, func(p *v1.Pod) {
				p.Spec.ShareProcessNamespace = &share
			}),
			wantNS: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_POD, Ipc: runtimeapi.NamespaceMode_POD},
			check: func(t *testing.T, cfg *runtimeapi.PodSandboxConfig) {
				if want := strings.Repeat("a", 60); cfg.Hostname != want {
					t.Errorf("hostname = %q, want %q (63 characters, trailing - and . cut)", cfg.Hostname, want)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := s.sandboxConfig(tt.pod, 4)
			md := cfg.Metadata
			if md.GetName() != tt.pod.Name || md.GetNamespace() != "ns" || md.GetUid() != string(tt.pod.UID) || md.GetAttempt() != 4 {
				t.Errorf("metadata = %v", md)
			}
			if got := cfg.Annotations[kubecontainer.AnnotationSandboxHash]; got != kubecontainer.HashSandbox(tt.pod) {
				t.Errorf("sandbox hash annotation = %q, want %q", got, kubecontainer.HashSandbox(tt.pod))
			}
			wantDir := "/var/log/pods/ns_" + tt.pod.Name + "_" + string(tt.pod.UID)
			if cfg.LogDirectory != wantDir || PodLogsDir("/var/log/pods", tt.pod) != wantDir {
				t.Errorf("log directory = %q, want %q", cfg.LogDirectory, wantDir)
			}
			if ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns.String() != tt.wantNS.String() {
				t.Errorf("namespace options = %v, want %v", ns, tt.wantNS)
			}
			if tt.pod.Annotations != nil {
				if _, leaked := tt.pod.Annotations[kubecontainer.AnnotationSandboxHash]; leaked {
					t.Error("sandboxConfig wrote into the pod's annotations")
				}
			}
			tt.check(t, cfg)
		})
	}
}
