package config

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// loadWith writes content to a config file, parses args (plus --config)
// as main does, and applies the file. It returns the Config, what was
// logged and the error.
func loadWith(t *testing.T, content string, args ...string) (Config, string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return loadPath(t, path, args...)
}

func loadPath(t *testing.T, path string, args ...string) (Config, string, error) {
	t.Helper()
	cfg := Default()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.AddFlags(fs)
	if path != "" {
		args = append([]string{"--config", path}, args...)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	warnings, err := cfg.LoadFile(fs)
	return cfg, strings.Join(warnings, "\n"), err
}

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

// fileDefault changes Default() into the defaults of a config file: the
// read-only port off, the kubelet port on every address.
func fileDefault(c *Config) {
	c.ReadOnlyPort = 0
	c.Address = "0.0.0.0"
}

func TestLoadFileMapsFields(t *testing.T) {
	tests := []struct {
		name    string
		content string
		args    []string
		// want changes Default() into the expected Config; ConfigFile
		// is filled in by the test.
		want func(c *Config)
	}{
		{
			name: "every implemented field",
			content: header + `
staticPodPath: /srv/manifests
podLogsDir: /srv/logs
syncFrequency: 30s
fileCheckFrequency: 5s
httpCheckFrequency: 15s
staticPodURL: http://10.0.0.1/pods
staticPodURLHeader:
  authorization: ["Bearer x"]
  X-Node: [n1, n2]
address: 0.0.0.0
tlsCertFile: /etc/minikubelet/tls.crt
tlsPrivateKeyFile: /etc/minikubelet/tls.key
rotateCertificates: true
port: 10260
enableDebuggingHandlers: false
authentication:
  x509:
    clientCAFile: /etc/minikubelet/ca.crt
  anonymous:
    enabled: true
  webhook:
    enabled: false
    cacheTTL: 1m
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 1m
    cacheUnauthorizedTTL: 5s
readOnlyPort: 10266
healthzBindAddress: 0.0.0.0
healthzPort: 10249
containerRuntimeEndpoint: unix:///run/k3s/containerd/containerd.sock
runtimeRequestTimeout: 30s
featureGates:
  EventedPLEG: true
crashLoopBackOff:
  maxContainerRestartPeriod: 1m
maxPods: 50
cgroupDriver: systemd
cgroupsPerQOS: false
cgroupRoot: /minikubelet
shutdownGracePeriod: 30s
shutdownGracePeriodCriticalPods: 10s
containerLogMaxSize: 50Mi
containerLogMaxFiles: 3
imageGCHighThresholdPercent: 90
imageGCLowThresholdPercent: 70
imageMinimumGCAge: 5m
evictionHard: {memory.available: 200Mi}
evictionSoft: {nodefs.available: 15%}
evictionSoftGracePeriod: {nodefs.available: 1m}
evictionMinimumReclaim: {memory.available: 50Mi}
mergeDefaultEvictionSettings: true
evictionMaxPodGracePeriod: 20
evictionPressureTransitionPeriod: 30s
kernelMemcgNotification: true
localStorageCapacityIsolation: false
kubeReserved: {cpu: 100m, memory: 256Mi}
systemReserved: {memory: 512Mi, pid: "1000"}
enforceNodeAllocatable: [none]
kubeReservedCgroup: /kube-reserved
systemReservedCgroup: /system.slice
failSwapOn: false
memorySwap: {swapBehavior: NoSwap}
podPidsLimit: 4096
registerWithTaints:
- {key: dedicated, value: infra, effect: NoSchedule}
nodeStatusUpdateFrequency: 20s
nodeStatusReportFrequency: 1m
kubeAPIQPS: 20
kubeAPIBurst: 40
`,
			// Webhook authorization needs node mode.
			args: []string{"--kubeconfig", "/etc/kubernetes/kubelet.conf"},
			want: func(c *Config) {
				c.PodManifestPath = "/srv/manifests"
				c.PodLogsDir = "/srv/logs"
				c.SyncFrequency = 30 * time.Second
				c.FileCheckFrequency = 5 * time.Second
				c.HTTPCheckFrequency = 15 * time.Second
				c.ManifestURL = "http://10.0.0.1/pods"
				c.ManifestURLHeader = http.Header{"Authorization": {"Bearer x"}, "X-Node": {"n1", "n2"}}
				c.Address = "0.0.0.0"
				c.TLSCertFile, c.TLSPrivateKeyFile, c.ClientCAFile = "/etc/minikubelet/tls.crt", "/etc/minikubelet/tls.key", "/etc/minikubelet/ca.crt"
				c.RotateCertificates = true
				c.Port = 10260
				c.EnableDebuggingHandlers = false
				c.AnonymousAuth = true
				c.AuthenticationTokenWebhook = false
				c.AuthenticationTokenWebhookCacheTTL = time.Minute
				c.AuthorizationMode = "Webhook"
				c.Kubeconfig = "/etc/kubernetes/kubelet.conf"
				c.AuthorizationWebhookCacheAuthorizedTTL = time.Minute
				c.AuthorizationWebhookCacheUnauthorizedTTL = 5 * time.Second
				c.ReadOnlyPort = 10266
				c.HealthzBindAddress = "0.0.0.0"
				c.HealthzPort = 10249
				c.RuntimeEndpoint = "unix:///run/k3s/containerd/containerd.sock"
				c.RuntimeRequestTimeout = 30 * time.Second
				c.FeatureGates = map[string]bool{"EventedPLEG": true}
				c.MaxContainerRestartPeriod = time.Minute
				c.MaxPods = 50
				c.CgroupDriver = "systemd"
				c.CgroupsPerQOS = false
				c.CgroupRoot = "/minikubelet"
				c.ShutdownGracePeriod = 30 * time.Second
				c.ShutdownGracePeriodCriticalPods = 10 * time.Second
				c.ContainerLogMaxSize = "50Mi"
				c.ContainerLogMaxFiles = 3
				c.ImageGCHighThresholdPercent = 90
				c.ImageGCLowThresholdPercent = 70
				c.ImageMinimumGCAge = 5 * time.Minute
				c.EvictionHard = map[string]string{"memory.available": "200Mi"}
				c.EvictionSoft = map[string]string{"nodefs.available": "15%"}
				c.EvictionSoftGracePeriod = map[string]string{"nodefs.available": "1m"}
				c.EvictionMinimumReclaim = map[string]string{"memory.available": "50Mi"}
				c.MergeDefaultEvictionSettings = true
				c.EvictionMaxPodGracePeriod = 20
				c.EvictionPressureTransitionPeriod = 30 * time.Second
				c.LocalStorageCapacityIsolation = false
				c.KubeReserved = map[string]string{"cpu": "100m", "memory": "256Mi"}
				c.SystemReserved = map[string]string{"memory": "512Mi", "pid": "1000"}
				c.EnforceNodeAllocatable = []string{"none"}
				c.KubeReservedCgroup, c.SystemReservedCgroup = "/kube-reserved", "/system.slice"
				c.FailSwapOn = false
				c.MemorySwapBehavior = "NoSwap"
				c.PodPidsLimit = 4096
				c.RegisterWithTaints = []v1.Taint{{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule}}
				c.NodeStatusUpdateFrequency, c.NodeStatusReportFrequency = 20*time.Second, time.Minute
				c.KubeAPIQPS, c.KubeAPIBurst = 20, 40
			},
		},
		{
			name:    "fields left out keep the defaults; the read-only port is off and the address any, as in a kubelet config file",
			content: header,
			want:    fileDefault,
		},
		{
			name:    "an explicit zero is kept where it means off",
			content: header + "healthzPort: 0\nreadOnlyPort: 0\nshutdownGracePeriod: 0s\n",
			want:    func(c *Config) { fileDefault(c); c.HealthzPort = 0 },
		},
		{
			name:    "flags given on the command line win over the file",
			content: header + "syncFrequency: 30s\nstaticPodPath: /srv/manifests\nmaxPods: 50\ncgroupsPerQOS: false\nstaticPodURL: http://a/pods\nstaticPodURLHeader: {A: [file]}\n",
			args:    []string{"--sync-frequency", "5s", "--read-only-port", "10255", "--cgroups-per-qos=true", "--manifest-url-header", "B:flag"},
			want: func(c *Config) {
				c.Address = "0.0.0.0"
				c.SyncFrequency = 5 * time.Second
				c.PodManifestPath = "/srv/manifests"
				c.MaxPods = 50
				c.ManifestURL = "http://a/pods"
				c.ManifestURLHeader = http.Header{"B": {"flag"}}
			},
		},
		{
			name:    "a flag given with its default value still wins",
			content: header + "syncFrequency: 30s\n",
			args:    []string{"--sync-frequency", "1m"},
			want:    fileDefault,
		},
		{
			name:    "feature gates merge, the command line's winning",
			content: header + "featureGates: {EventedPLEG: true, SomeGate: false}\n",
			args:    []string{"--feature-gates", "EventedPLEG=false,Other=true"},
			want: func(c *Config) {
				fileDefault(c)
				c.FeatureGates = map[string]bool{"EventedPLEG": false, "SomeGate": false, "Other": true}
			},
		},
		{
			name:    "a file that sets only the node status update frequency reports as often, as the kubelet defaults it",
			content: header + "nodeStatusUpdateFrequency: 20s\n",
			want: func(c *Config) {
				fileDefault(c)
				c.NodeStatusUpdateFrequency, c.NodeStatusReportFrequency = 20*time.Second, 20*time.Second
			},
		},
		{
			name:    "fields minikubelet ignores do not change anything",
			content: header + "topologyManagerPolicy: none\ncpuManagerPolicy: static\n",
			want:    fileDefault,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := loadWith(t, tt.content, tt.args...)
			if err != nil {
				t.Fatalf("LoadFile: %v", err)
			}
			want := Default()
			tt.want(&want)
			want.ConfigFile = got.ConfigFile
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Config differs:\n got %+v\nwant %+v", got, want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestLoadFileWithoutConfigChangesNothing(t *testing.T) {
	got, log, err := loadPath(t, "", "--sync-frequency", "5s")
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.SyncFrequency = 5 * time.Second
	if !reflect.DeepEqual(got, want) || log != "" {
		t.Errorf("got %+v, warnings %q; want %+v and none", got, log, want)
	}
}

func TestLoadFileWarnsOnceOfIgnoredFields(t *testing.T) {
	_, log, err := loadWith(t, header+"topologyManagerPolicy: none\nauthentication: {anonymous: {enabled: false}}\nsyncFrequency: 10s\nlogging: {format: json}\ncrashLoopBackOff: {maxContainerRestartPeriod: 20s}\nreservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "ignored: logging, reservedMemory, topologyManagerPolicy (minikubelet does not implement them)"
	if strings.Count(log, "ignored:") != 1 || strings.Count(log, "\n") != 0 || !strings.Contains(log, want) {
		t.Errorf("warnings = %q; want one with %q", log, want)
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		// want are substrings of the error besides the file's path.
		want []string
	}{
		{"not YAML", "apiVersion: [unclosed\n", []string{"not valid YAML"}},
		{"a list, not a mapping", "- a\n- b\n", []string{"not a KubeletConfiguration", "apiVersion: kubelet.config.k8s.io/v1beta1"}},
		{"empty", "", []string{"not a KubeletConfiguration"}},
		{"no apiVersion", "kind: KubeletConfiguration\n", []string{"apiVersion: missing", "want apiVersion: kubelet.config.k8s.io/v1beta1"}},
		{"wrong apiVersion", "apiVersion: kubelet.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\n", []string{"apiVersion", "v1alpha1", "is not supported"}},
		{"wrong kind", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n", []string{"kind", `"Pod" is not supported`, "want kind: KubeletConfiguration"}},
		{"misspelled field", header + "staticPodPat: /etc/kubernetes/manifests\n", []string{"staticPodPat: unknown field", "check its spelling"}},
		{"wrong case", header + "StaticPodPath: /etc/kubernetes/manifests\n", []string{"StaticPodPath: unknown field"}},
		{"misspelled nested field", header + "authentication:\n  anonymous:\n    enabeld: true\n", []string{"authentication.anonymous.enabeld: unknown field"}},
		{"misspelled field in one ignored", header + "logging:\n  format: json\n  fomat: text\n", []string{"logging.fomat: unknown field"}},
		{"misspelled field in a list ignored", header + "reservedMemory:\n- numaNode: 0\n  limits: {memory: 1Gi}\n- numaNod: 1\n", []string{"reservedMemory[1].numaNod: unknown field"}},
		{"duplicate field", header + "syncFrequency: 1m\nsyncFrequency: 2m\n", []string{"syncFrequency", "already set"}},
		{"bad duration", header + "syncFrequency: 5x\n", []string{"syncFrequency:", `"5x"`, "20s"}},
		{"number for a duration", header + "fileCheckFrequency: 20\n", []string{"fileCheckFrequency:", "cannot unmarshal number"}},
		{"string for a number", header + "readOnlyPort: http\n", []string{"readOnlyPort:", "cannot unmarshal string"}},
		{"negative port", header + "readOnlyPort: -1\n", []string{"readOnlyPort: -1 is not a port"}},
		{"port too big", header + "healthzPort: 70000\n", []string{"healthzPort: 70000 is not a port"}},
		{"negative duration", header + "syncFrequency: -5s\n", []string{"syncFrequency: must be a positive duration", "-5s"}},
		{"bad address", header + "address: localhost\n", []string{`address: "localhost" is not an IP address`}},
		{"bad healthz address", header + "healthzBindAddress: 1.2.3\n", []string{"healthzBindAddress:"}},
		{"bad endpoint", header + "containerRuntimeEndpoint: tcp://1.2.3.4:1\n", []string{"containerRuntimeEndpoint:", "unix:///"}},
		{"bad URL", header + "staticPodURL: ftp://x/pods\n", []string{"staticPodURL:", "http://"}},
		{"relative manifest path", header + "staticPodPath: manifests\n", []string{"staticPodPath:", "absolute path"}},
		{"empty header name", header + "staticPodURLHeader: {'': [x]}\n", []string{"staticPodURLHeader:", "empty name"}},
		{"bad cgroup driver", header + "cgroupDriver: systemdd\n", []string{"cgroupDriver:", "cgroupfs, systemd"}},
		{"relative cgroup root", header + "cgroupRoot: kubepods\n", []string{"cgroupRoot:"}},
		{"bad log size", header + "containerLogMaxSize: ten\n", []string{"containerLogMaxSize:", "10Mi"}},
		{"too few log files", header + "containerLogMaxFiles: 1\n", []string{"containerLogMaxFiles: must be at least 2"}},
		{"negative max pods", header + "maxPods: -1\n", []string{"maxPods:"}},
		{"percent above 100", header + "imageGCHighThresholdPercent: 101\n", []string{"imageGCHighThresholdPercent:", "0 to 100"}},
		{"low threshold above high", header + "imageGCLowThresholdPercent: 90\n", []string{"imageGCLowThresholdPercent: 90 must be below imageGCHighThresholdPercent (85)"}},
		{"critical grace above total", header + "shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n", []string{"shutdownGracePeriodCriticalPods: 20s exceeds shutdownGracePeriod (10s)"}},
		{"negative shutdown grace", header + "shutdownGracePeriod: -1s\n", []string{"shutdownGracePeriod:"}},
		{"restart period above 5m", header + "crashLoopBackOff:\n  maxContainerRestartPeriod: 10m\n", []string{"crashLoopBackOff.maxContainerRestartPeriod:", "1s to 5m"}},
		{"bad authorization mode", header + "authorization: {mode: Node}\n", []string{"authorization.mode:", `"Node" is not one of AlwaysAllow, Webhook`}},
		{"kubelet port too big", header + "port: 70000\n", []string{"port: 70000 is not a port"}},
		{"negative webhook cache TTL", header + "authentication: {webhook: {cacheTTL: -1s}}\n", []string{"authentication.webhook.cacheTTL:"}},
		{"empty feature gate", header + "featureGates: {'': true}\n", []string{"featureGates:"}},
		{"taint without effect", header + "registerWithTaints: [{key: a}]\n", []string{"registerWithTaints: [0] a: effect \"\" is not NoSchedule"}},
		{"taint with a bad key", header + "registerWithTaints: [{key: 'a b', effect: NoExecute}]\n", []string{"registerWithTaints: [0]", "key:"}},
		{"zero API burst", header + "kubeAPIQPS: 0\n", []string{"kubeAPIQPS: must be positive"}},
		{"negative status frequency", header + "nodeStatusUpdateFrequency: -1s\n", []string{"nodeStatusUpdateFrequency: must be a positive duration"}},
		{"non-bool feature gate", header + "featureGates: {EventedPLEG: maybe}\n", []string{"featureGates:", "cannot unmarshal"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := loadWith(t, tt.content)
			if err == nil {
				t.Fatal("LoadFile succeeded; want an error")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines", err)
			}
			for _, w := range append([]string{"config.yaml"}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadFileReportsEveryBadField(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{"bad values", "readOnlyPort: -1\ncgroupDriver: x\nmaxPods: -3\n", []string{"cgroupDriver:", "maxPods:", "readOnlyPort:"}},
		{"unknown fields and bad values", "readOnlyPort: -1\nsyncFrequncy: 1m\nmaxPod: 3\n", []string{"maxPod:", "readOnlyPort:", "syncFrequncy:"}},
		{"values that do not decode", "syncFrequency: 5x\nhealthzPort: many\nmaxPods: -3\n", []string{"healthzPort:", "maxPods:", "syncFrequency:"}},
		{"every kind of mistake at once", "readOnlyPort: -5\nsyncFrequency: 5x\nstaticPodPat: /etc/x\nmaxPods: \"abc\"\nauthentication: {anonymous: {enabeld: true}}\ncgroupDriver: x\n",
			[]string{"authentication.anonymous.enabeld:", "cgroupDriver:", "maxPods:", "readOnlyPort:", "staticPodPat:", "syncFrequency:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := loadWith(t, header+tt.content)
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("want one line per bad field (%q), got %q", tt.want, err)
			}
			for _, l := range lines {
				if !strings.HasPrefix(l, "config file ") {
					t.Errorf("line %q does not name the file", l)
				}
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("line %d is %q, want it to name %s (lines in the order of the fields' names)", i, lines[i], w)
				}
			}
		})
	}
}

func TestLoadFileUnreadable(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, _, err := loadPath(t, missing)
	if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "--config") {
		t.Errorf("err = %v; want one naming %s and --config", err, missing)
	}
}

// A flag whose value fails validation is named as a flag even when
// --config is used.
func TestValidateNamesNewFlags(t *testing.T) {
	tests := []struct {
		name string
		set  func(c *Config)
		want string
	}{
		{"cgroup driver", func(c *Config) { c.CgroupDriver = "x" }, "--cgroup-driver"},
		{"log files", func(c *Config) { c.ContainerLogMaxFiles = 1 }, "--container-log-max-files"},
		{"log size", func(c *Config) { c.ContainerLogMaxSize = "-1Mi" }, "--container-log-max-size"},
		{"gc thresholds", func(c *Config) { c.ImageGCLowThresholdPercent = 85 }, "--image-gc-low-threshold: 85 must be below --image-gc-high-threshold (85)"},
		{"critical grace", func(c *Config) { c.ShutdownGracePeriodCriticalPods = time.Second }, "--shutdown-grace-period-critical-pods"},
		{"max pods", func(c *Config) { c.MaxPods = -1 }, "--max-pods"},
		{"image age", func(c *Config) { c.ImageMinimumGCAge = -time.Second }, "--minimum-image-ttl-duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.set(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v; want an error with %q", err, tt.want)
			}
		})
	}
	c := Default()
	if err := c.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

// examples/config.yaml, which make install puts in /etc/minikubelet, loads
// without warnings and spells out the defaults.
func TestExampleConfigIsTheDefaults(t *testing.T) {
	got, ignored, err := readConfigFile(filepath.Join("..", "..", "examples", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ignored) > 0 {
		t.Errorf("ignored fields %v", ignored)
	}
	if want := Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("examples/config.yaml gives\n %+v\nwant the defaults\n %+v", got, want)
	}
}

// TestLoadFileHostile feeds config files built to cost time and memory:
// each is refused with a short error naming the file, quickly and without
// allocating much more than its size.
func TestLoadFileHostile(t *testing.T) {
	bigName := strings.Repeat("x", 512<<10)
	var aliases strings.Builder
	aliases.WriteString(header + "staticPodURLHeader:\n  X: [&v " + strings.Repeat("v", 100<<10) + "]\n")
	for i := range 20 {
		fmt.Fprintf(&aliases, "  X%d: [*v]\n", i)
	}
	var laughs strings.Builder
	laughs.WriteString(header + "featureGates:\n  l0: &l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&laughs, "  l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 9), ","))
	}
	var unknown strings.Builder
	unknown.WriteString(header)
	for i := range 5000 {
		fmt.Fprintf(&unknown, "field%d: 1\n", i)
	}
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{"over 1 MiB", header + "#" + strings.Repeat("x", 1<<20) + "\n", []string{"larger than 1048576 bytes"}},
		{"a string aliased past 1 MiB", aliases.String(), []string{"aliases (*name) expand it to more than 1048576 bytes"}},
		{"billion laughs", laughs.String(), []string{"not valid YAML", "excessive aliasing"}},
		{"10,000 brackets deep", header + "featureGates: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n", []string{"nests more than 100 levels deep"}},
		{"100,000 list entries", header + "featureGates:\n" + strings.Repeat("- x\n", 100000), []string{"keys, list entries and brackets, more than the 20000"}},
		{"5,000 unknown fields", unknown.String(), []string{"field0: unknown field", "more errors"}},
		{"a misspelled field of 512 KiB", header + bigName + ": 1\n", []string{"not valid YAML"}},
		{"a misspelled field of 512 KiB (explicit key)", header + "? " + bigName + "\n: 1\n",
			[]string{"xxxx", "... (a 524288-byte name): unknown field"}},
		{"a log size of 100,000 digits", header + "containerLogMaxSize: \"1" + strings.Repeat("0", 100000) + "\"\n",
			[]string{"containerLogMaxSize:", "100001 characters long"}},
		{"invalid UTF-8", header + "staticPodPath: /etc/\xff\n", []string{"not valid YAML", "invalid"}},
		{"NUL", header + "staticPodPath: \"/etc/\\0\"\n", []string{"staticPodPath", "must not contain a NUL character"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, _, err := loadWith(t, tt.content)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes: %v, %d bytes allocated", len(tt.content), elapsed.Round(time.Millisecond), alloc)
			if err == nil {
				t.Fatal("LoadFile succeeded; want an error")
			}
			msg := err.Error()
			t.Logf("error: %.300s", msg)
			for _, w := range append([]string{"config.yaml"}, tt.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not contain %q: %.2000q", w, msg)
				}
			}
			if lines := strings.Count(msg, "\n") + 1; lines > maxConfigErrors+1 {
				t.Errorf("error has %d lines, want at most %d", lines, maxConfigErrors+1)
			}
			if len(msg) > (maxConfigErrors+1)*(maxConfigErrorLen+200) {
				t.Errorf("error is %d bytes long", len(msg))
			}
			if limit := uint64(50*len(tt.content) + 4<<20); alloc > limit {
				t.Errorf("allocated %d bytes, want at most %d", alloc, limit)
			}
			if elapsed > 20*time.Second {
				t.Errorf("took %v", elapsed)
			}
		})
	}
}
