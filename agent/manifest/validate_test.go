package manifest

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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
			name:   "env name with an equals sign",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Env[0].Name = "A=B" },
			want:   []string{`spec.containers[0].env[0].name: Invalid value: "A=B"`},
		},
		{
			name: "env names the API server accepts since 1.34",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, v1.EnvVar{Name: "1st.var-x"}, v1.EnvVar{Name: "MY VAR"})
			},
		},
		{
			name:   "env valueFrom without a source",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Env[0] = v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{}} },
			want:   []string{"spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"},
		},
		{
			name: "env valueFrom with two sources",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Env[0] = v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{
					FieldRef:         &v1.ObjectFieldSelector{FieldPath: "metadata.name"},
					ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"},
				}}
			},
			want: []string{"spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not have more than one field specified at a time"},
		},
		{
			name: "env valueFrom beside a value",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Env[0].ValueFrom = &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}
			},
			want: []string{"spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"},
		},
		{
			name: "env fieldRef and resourceFieldRef",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Env = []v1.EnvVar{
					{Name: "A", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}}},
					{Name: "B", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.hostname"}}},
					{Name: "C", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.hugepages-2Mi"}}},
					{Name: "D", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.pids"}}},
					{Name: "E", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}},
				}
			},
			want: []string{
				`spec.containers[0].env[1].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.hostname"`,
				`spec.containers[0].env[3].valueFrom.resourceFieldRef.resource: Unsupported value: "limits.pids"`,
				"spec.containers[0].env[4].valueFrom.configMapKeyRef.key: Required value",
			},
		},
		{
			name:   "envFrom without a source",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{Prefix: "X_"}} },
			want:   []string{"spec.containers[0].envFrom[0]: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"},
		},
		{
			name:   "port name not an IANA service name",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].Name = "http_1" },
			want:   []string{`spec.containers[0].ports[0].name: Invalid value: "http_1": must contain only alpha-numeric characters`},
		},
		{
			name: "port names unique per container",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Ports[0].Name = "web"
				p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{Name: "web", ContainerPort: 81})
				p.Spec.InitContainers[0].Ports = []v1.ContainerPort{{Name: "web", ContainerPort: 82}} // another container
			},
			want: []string{`spec.containers[0].ports[1].name: Duplicate value: "web"`},
		},
		{
			name: "host network: hostPort must equal containerPort",
			mutate: func(p *v1.Pod) {
				p.Spec.HostNetwork = true
				p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: 9090}, v1.ContainerPort{ContainerPort: 53, HostPort: 53})
			},
			want: []string{"spec.containers[0].ports[0].containerPort: Invalid value: 80: must match `hostPort` when `hostNetwork` is true"},
		},
		{
			name: "resources",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources = v1.ResourceRequirements{
					Limits: v1.ResourceList{
						"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi"), "ephemeral-storage": resource.MustParse("1Gi"),
						"hugepages-2Mi": resource.MustParse("4Mi"),
					},
					Requests: v1.ResourceList{"cpu": resource.MustParse("500m"), "hugepages-2Mi": resource.MustParse("4Mi")},
				}
			},
		},
		{
			name: "resource name not known",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Limits = v1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "hugepages-x": resource.MustParse("1")}
			},
			want: []string{
				`spec.containers[0].resources.limits[hugepages-x]: Invalid value: "hugepages-x": must be hugepages-<page size>`,
				`spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "nvidia.com/gpu": must be a standard resource for containers`,
			},
		},
		{
			name: "resource negative",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{"memory": resource.MustParse("-1Mi")}
			},
			want: []string{`spec.containers[0].resources.requests[memory]: Invalid value: "-1Mi": must be greater than or equal to 0`},
		},
		{
			name: "request above limit",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources = v1.ResourceRequirements{
					Limits:   v1.ResourceList{"cpu": resource.MustParse("1")},
					Requests: v1.ResourceList{"cpu": resource.MustParse("1500m")},
				}
			},
			want: []string{`spec.containers[0].resources.requests[cpu]: Invalid value: "1500m": must be less than or equal to cpu limit of 1`},
		},
		{
			name: "huge pages are not overcommitted",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources = v1.ResourceRequirements{
					Limits:   v1.ResourceList{"hugepages-2Mi": resource.MustParse("4Mi")},
					Requests: v1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi"), "hugepages-1Gi": resource.MustParse("1Gi")},
				}
			},
			want: []string{
				"spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
				`spec.containers[0].resources.requests[hugepages-2Mi]: Invalid value: "2Mi": must be equal to hugepages-2Mi limit of 4Mi`,
			},
		},
		{
			name:   "dns policy",
			mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = "Cluster" },
			want:   []string{`spec.dnsPolicy: Unsupported value: "Cluster": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`},
		},
		{
			name:   "dns policy None needs dnsConfig",
			mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSNone },
			want:   []string{"spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"},
		},
		{
			name: "dns policy None needs a nameserver",
			mutate: func(p *v1.Pod) {
				p.Spec.DNSPolicy = v1.DNSNone
				p.Spec.DNSConfig = &v1.PodDNSConfig{Searches: []string{"svc.local"}}
			},
			want: []string{"spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"},
		},
		{
			name: "dns config",
			mutate: func(p *v1.Pod) {
				p.Spec.DNSPolicy = v1.DNSNone
				p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"10.0.0.1", "::1", "1.1.1.1", "dns.local"}, Options: []v1.PodDNSConfigOption{{}}}
			},
			want: []string{
				"spec.dnsConfig.nameservers: Invalid value:",
				`spec.dnsConfig.nameservers[3]: Invalid value: "dns.local": must be a valid IP address`,
				"spec.dnsConfig.options[0].name: Required value",
			},
		},
		{
			name:   "active deadline zero",
			mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr[int64](0) },
			want:   []string{"spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"},
		},
		{
			name: "volumes and mounts",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{
					{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/data", Type: ptr(v1.HostPathDirectoryOrCreate)}}},
					{Name: "scratch"}, // Default makes it an emptyDir
				}
				p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
					{Name: "data", MountPath: "/data", SubPath: "app/logs"},
					{Name: "scratch", MountPath: "/tmp", SubPathExpr: "$(POD_NAME)", MountPropagation: ptr(v1.MountPropagationHostToContainer)},
				}
				p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
			},
		},
		{
			name: "volume names",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "data"}, {Name: "data"}, {Name: "Cache"}, {}}
			},
			want: []string{
				`spec.volumes[1].name: Duplicate value: "data"`,
				`spec.volumes[2].name: Invalid value: "Cache": a lowercase RFC 1123 label`,
				"spec.volumes[3].name: Required value",
			},
		},
		{
			name: "volume with two types",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
					HostPath: &v1.HostPathVolumeSource{Path: "/srv"}, EmptyDir: &v1.EmptyDirVolumeSource{},
				}}}
			},
			want: []string{"spec.volumes[0]: Forbidden: may not specify more than 1 volume type"},
		},
		{
			name: "host path",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{
					{Name: "a", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{}}},
					{Name: "b", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/../etc", Type: ptr(v1.HostPathType("Dir"))}}},
				}
			},
			want: []string{
				"spec.volumes[0].hostPath.path: Required value",
				`spec.volumes[1].hostPath.path: Invalid value: "/srv/../etc": must not contain '..'`,
				`spec.volumes[1].hostPath.type: Unsupported value: "Dir"`,
			},
		},
		{
			name: "image volumes",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{
					{Name: "a", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "example.com/data:1", PullPolicy: v1.PullIfNotPresent}}},
					{Name: "b", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{PullPolicy: v1.PullNever}}},
					{Name: "c", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "data", PullPolicy: "Sometimes"}}},
				}
			},
			want: []string{
				"spec.volumes[1].image.reference: Required value: image is required",
				`spec.volumes[2].image.pullPolicy: Unsupported value: "Sometimes"`,
			},
		},
		{
			name: "host path relative",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{
					{Name: "a", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "srv/data"}}},
					{Name: "b", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "../etc"}}},
					{Name: "c", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/"}}},
				}
			},
			want: []string{
				`spec.volumes[0].hostPath.path: Invalid value: "srv/data": must be an absolute path`,
				`spec.volumes[1].hostPath.path: Invalid value: "../etc": must be an absolute path`,
				`spec.volumes[1].hostPath.path: Invalid value: "../etc": must not contain '..'`,
			},
		},
		{
			name: "downward API files",
			mutate: func(p *v1.Pod) {
				items := []v1.DownwardAPIVolumeFile{
					{Path: "ok/name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
					{Path: "../x"},
					{Path: "/abs"},
					{Path: "..data"},
					{},
					{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1m")}},
					{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
				}
				p.Spec.Volumes = []v1.Volume{
					{Name: "d", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: items}}},
					{Name: "p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
						{DownwardAPI: &v1.DownwardAPIProjection{Items: items[1:2]}}}}}},
				}
			},
			want: []string{
				`spec.volumes[0].downwardAPI.items[1].path: Invalid value: "../x": must not contain '..'`,
				`spec.volumes[0].downwardAPI.items[1].path: Invalid value: "../x": must not start with '..'`,
				`spec.volumes[0].downwardAPI.items[2].path: Invalid value: "/abs": must be a relative path`,
				`spec.volumes[0].downwardAPI.items[3].path: Invalid value: "..data": must not start with '..'`,
				"spec.volumes[0].downwardAPI.items[4].path: Required value",
				`spec.volumes[0].downwardAPI.items[5].resourceFieldRef.divisor: Invalid value: "1m": only divisor's values 1, 1k`,
				`spec.volumes[1].projected.sources[0].downwardAPI.items[0].path: Invalid value: "../x": must not contain '..'`,
				`spec.volumes[1].projected.sources[0].downwardAPI.items[0].path: Invalid value: "../x": must not start with '..'`,
			},
		},
		{
			name: "labels and annotations",
			mutate: func(p *v1.Pod) {
				p.Labels = map[string]string{"app": "web", "example.com/tier": "front", "Bad Key": "x", "long": strings.Repeat("v", 64)}
				p.Annotations = map[string]string{"Example.com/Any": strings.Repeat("v", 1000), "a/b/c": ""}
			},
			want: []string{
				`metadata.labels: Invalid value: "Bad Key": name part must consist of alphanumeric characters`,
				`metadata.labels: Invalid value: "vvvv`,
				`metadata.annotations: Invalid value: "a/b/c": `,
			},
		},
		{
			name: "annotations over 256 KiB",
			mutate: func(p *v1.Pod) {
				p.Annotations = map[string]string{"a": strings.Repeat("v", 200<<10), "b": strings.Repeat("v", 100<<10)}
			},
			want: []string{"metadata.annotations: Too long: may not be more than 262144 bytes"},
		},
		{
			name: "quantities that do not fit in 64 bits",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources = v1.ResourceRequirements{
					Limits: v1.ResourceList{
						v1.ResourceCPU:    resource.MustParse("9223372036854775807m"),
						v1.ResourceMemory: resource.MustParse("9223372036854775808"),
					},
					Requests: v1.ResourceList{
						v1.ResourceCPU:    resource.MustParse("9223372036854776"),
						v1.ResourceMemory: resource.MustParse("1e999999999"),
					},
				}
				p.Spec.Overhead = v1.ResourceList{v1.ResourceMemory: resource.MustParse("1e19")}
				p.Spec.Volumes = []v1.Volume{{Name: "e", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("-1"))}}}}
			},
			want: []string{
				`spec.volumes[0].emptyDir.sizeLimit: Invalid value: "-1": must be greater than or equal to 0`,
				`spec.containers[0].resources.limits[memory]: Invalid value: "9223372036854775808": must be at most 9223372036854775807`,
				`spec.containers[0].resources.requests[cpu]: Invalid value: "9223372036854776": must be at most`,
				`spec.containers[0].resources.requests[memory]: Invalid value: "1e999999999": must be at most`,
				`spec.overhead[memory]: Invalid value: "10e18": must be at most`,
			},
		},
		{
			name: "NUL characters",
			mutate: func(p *v1.Pod) {
				p.Annotations = map[string]string{"a": "x\x00"}
				p.Spec.Containers[0].Command = []string{"sh", "-c\x00"}
				p.Spec.Containers[0].Env[0].Value = "\x00"
				p.Spec.Containers[0].Ports[0].Name = ""
			},
			want: []string{
				`metadata.annotations[a]: Invalid value: "x\x00": must not contain a NUL character`,
				`spec.containers[0].command[1]: Invalid value: "-c\x00": must not contain a NUL character`,
				`spec.containers[0].env[0].value: Invalid value: "\x00": must not contain a NUL character`,
			},
		},
		{
			name: "names far over their limit get only the length message",
			mutate: func(p *v1.Pod) {
				p.Name = strings.Repeat("N", 300)
				p.Spec.Containers[0].Name = strings.Repeat("C", 64)
			},
			want: []string{
				`metadata.name: Invalid value: "NNNN`,
				`spec.containers[0].name: Invalid value: "CCCC`,
			},
		},
		{
			name:   "a name of 300 characters gets only the length message",
			mutate: func(p *v1.Pod) { p.Name = strings.Repeat("N", 300) },
			want:   []string{`metadata.name: Invalid value: "` + strings.Repeat("N", 300) + `": must be no more than 253 characters`},
		},
		{
			name: "mount of an undeclared volume",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "nope", MountPath: "/x"}, {MountPath: "/y"}}
			},
			want: []string{
				`spec.containers[0].volumeMounts[0].name: Not found: "nope"`,
				"spec.containers[0].volumeMounts[1].name: Required value",
			},
		},
		{
			name: "mount paths",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "data"}}
				p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
					{Name: "data"}, {Name: "data", MountPath: "data"},
					{Name: "data", MountPath: "/data"}, {Name: "data", MountPath: "/data/"},
				}
			},
			want: []string{
				"spec.containers[0].volumeMounts[0].mountPath: Required value",
				`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "data": must be an absolute path`,
				`spec.containers[0].volumeMounts[3].mountPath: Invalid value: "/data/": must be unique`,
			},
		},
		{
			name: "sub paths stay inside the volume",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "data"}}
				p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
					{Name: "data", MountPath: "/a", SubPath: "/etc"},
					{Name: "data", MountPath: "/b", SubPath: "x/../../etc"},
					{Name: "data", MountPath: "/c", SubPath: "x", SubPathExpr: "$(X)"},
					{Name: "data", MountPath: "/d", MountPropagation: ptr(v1.MountPropagationMode("Shared"))},
				}
			},
			want: []string{
				`spec.containers[0].volumeMounts[0].subPath: Invalid value: "/etc": must be a relative path`,
				`spec.containers[0].volumeMounts[1].subPath: Invalid value: "x/../../etc": must not contain '..'`,
				`spec.containers[0].volumeMounts[2].subPathExpr: Invalid value: "$(X)": subPathExpr and subPath are mutually exclusive`,
				`spec.containers[0].volumeMounts[3].mountPropagation: Unsupported value: "Shared"`,
			},
		},
		{
			name: "bidirectional propagation needs a privileged container",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "data"}}
				p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/d", MountPropagation: ptr(v1.MountPropagationBidirectional)}}
				p.Spec.InitContainers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/d", MountPropagation: ptr(v1.MountPropagationBidirectional)}}
				p.Spec.InitContainers[0].SecurityContext = &v1.SecurityContext{Privileged: ptr(true)}
			},
			want: []string{
				"spec.containers[0].volumeMounts[0].mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers",
			},
		},
		{
			name: "probes and hooks",
			mutate: func(p *v1.Pod) {
				c := &p.Spec.Containers[0]
				c.Ports[0].Name = "http"
				c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http"), Scheme: v1.URISchemeHTTPS}}, SuccessThreshold: 1}
				c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}}, SuccessThreshold: 3}
				c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9090}}, TerminationGracePeriodSeconds: ptr[int64](5)}
				c.Lifecycle = &v1.Lifecycle{
					PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
					PreStop:   &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 30}},
				}
				p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{
					Name: "sidecar", Image: "envoy:1", RestartPolicy: ptr(v1.ContainerRestartPolicyAlways),
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"ready"}}}},
					Lifecycle:      &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 0}}},
				})
			},
		},
		{
			name:   "probe without a handler",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].LivenessProbe = &v1.Probe{PeriodSeconds: 5} },
			want:   []string{"spec.containers[0].livenessProbe: Required value: must specify a handler type"},
		},
		{
			name: "probe with two handlers",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{
					Exec: &v1.ExecAction{Command: []string{"true"}}, TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)},
				}}
			},
			want: []string{"spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"},
		},
		{
			name: "probe handlers malformed",
			mutate: func(p *v1.Pod) {
				c := &p.Spec.Containers[0]
				c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{}}}
				c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
					Port: intstr.FromInt32(0), Scheme: "ftp", HTTPHeaders: []v1.HTTPHeader{{Name: "Bad Header"}},
				}}}
				c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 70000}}}
			},
			want: []string{
				"spec.containers[0].livenessProbe.exec.command: Required value",
				"spec.containers[0].readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
				`spec.containers[0].readinessProbe.httpGet.scheme: Unsupported value: "ftp"`,
				`spec.containers[0].readinessProbe.httpGet.httpHeaders[0].name: Invalid value: "Bad Header"`,
				"spec.containers[0].startupProbe.grpc.port: Invalid value: 70000: must be between 1 and 65535, inclusive",
			},
		},
		{
			name: "probe port names",
			mutate: func(p *v1.Pod) {
				c := &p.Spec.Containers[0]
				c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("metrics")}}}
				c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("Not_A_Name")}}}
			},
			want: []string{
				`spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: "metrics": must be the name of one of the container's ports`,
				`spec.containers[0].readinessProbe.httpGet.port: Invalid value: "Not_A_Name"`,
			},
		},
		{
			name: "probe timings",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].LivenessProbe = &v1.Probe{
					ProbeHandler:        v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
					InitialDelaySeconds: -1, TimeoutSeconds: -1, PeriodSeconds: -1, SuccessThreshold: 2, FailureThreshold: -1,
					TerminationGracePeriodSeconds: ptr[int64](0),
				}
				p.Spec.Containers[0].ReadinessProbe = &v1.Probe{
					ProbeHandler:                  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
					TerminationGracePeriodSeconds: ptr[int64](5),
				}
			},
			want: []string{
				"spec.containers[0].livenessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0",
				"spec.containers[0].livenessProbe.timeoutSeconds: Invalid value: -1",
				"spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1",
				"spec.containers[0].livenessProbe.failureThreshold: Invalid value: -1",
				"spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0",
				"spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
				"spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes",
			},
		},
		{
			name: "startup probe success threshold",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 3}
			},
			want: []string{"spec.containers[0].startupProbe.successThreshold: Invalid value: 3: must be 1"},
		},
		{
			name: "init container without restartPolicy Always has no probes or hooks",
			mutate: func(p *v1.Pod) {
				p.Spec.InitContainers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
				p.Spec.InitContainers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
			},
			want: []string{
				"spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
				"spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always",
			},
		},
		{
			name: "hooks malformed",
			mutate: func(p *v1.Pod) {
				p.Spec.TerminationGracePeriodSeconds = ptr[int64](10)
				p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{
					PostStart: &v1.LifecycleHandler{},
					PreStop:   &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 11}},
				}
			},
			want: []string{
				"spec.containers[0].lifecycle.postStart: Required value: must specify a handler type",
				"spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: 11: must be non-negative and less than terminationGracePeriodSeconds (10)",
			},
		},
		{
			name: "hook sleep negative, and an http hook on a port number",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{
					PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(8080)}},
					PreStop:   &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: -1}},
				}
			},
			want: []string{"spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: -1: must be non-negative and less than terminationGracePeriodSeconds (30)"},
		},
		{
			name: "resize policy valid",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{
					{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
					{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer},
				}
			},
		},
		{
			name: "resize policy: unknown resource, duplicate, unknown policy",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{
					{ResourceName: "gpu", RestartPolicy: v1.NotRequired},
					{ResourceName: v1.ResourceCPU, RestartPolicy: "Sometimes"},
					{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
				}
			},
			want: []string{
				`spec.containers[0].resizePolicy[0].resourceName: Unsupported value: "gpu"`,
				`spec.containers[0].resizePolicy[1].restartPolicy: Unsupported value: "Sometimes"`,
				`spec.containers[0].resizePolicy[2].resourceName: Duplicate value: "cpu"`,
			},
		},
		{
			name: "resize policy RestartContainer in a Never pod and in an init container",
			mutate: func(p *v1.Pod) {
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				restart := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
				p.Spec.InitContainers[0].ResizePolicy = restart
				p.Spec.Containers[0].ResizePolicy = restart
			},
			want: []string{
				`spec.initContainers[0].resizePolicy[0].restartPolicy: Invalid value: "RestartContainer": must not be set to 'RestartContainer' for non-sidecar initContainers`,
				`spec.containers[0].resizePolicy[0].restartPolicy: Invalid value: "RestartContainer": must be 'NotRequired' when pod ` + "`restartPolicy`" + ` is 'Never'`,
			},
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
