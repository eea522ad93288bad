package config

import (
	"encoding/json"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The kubelet port's settings: the flags' defaults are the kubelet config
// file's, the authorization mode follows the mode (node or standalone),
// and the combinations that would open the port, or cannot work, are
// refused naming the flags and the config file's fields.
func TestServerFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, c *Config)
	}{
		{
			name: "defaults: the kubelet config file's",
			check: func(t *testing.T, c *Config) {
				if c.Port != 10250 || c.AnonymousAuth || !c.AuthenticationTokenWebhook || c.AuthenticationTokenWebhookCacheTTL != 2*time.Minute ||
					c.AuthorizationWebhookCacheAuthorizedTTL != 5*time.Minute || c.AuthorizationWebhookCacheUnauthorizedTTL != 30*time.Second ||
					!c.EnableDebuggingHandlers || c.SocketPath != "/run/minikubelet/minikubelet.sock" {
					t.Errorf("defaults %+v", c.ServerConfig)
				}
				if got := c.AuthorizationModeToUse(); got != AuthorizationAlwaysAllow {
					t.Errorf("standalone authorization %q, want AlwaysAllow", got)
				}
				if c.CanAuthenticate() {
					t.Error("standalone without a client CA or tokens: CanAuthenticate, want not (the port is not served)")
				}
				if c.CertDirectory() != "/var/lib/minikubelet/pki" {
					t.Errorf("cert dir %q", c.CertDirectory())
				}
			},
		},
		{
			name: "node mode: Webhook, tokens checked with TokenReview",
			args: []string{"--kubeconfig", "/k"},
			check: func(t *testing.T, c *Config) {
				if c.AuthorizationModeToUse() != AuthorizationWebhook || !c.TokenWebhook() || !c.CanAuthenticate() {
					t.Errorf("node mode: %s, token webhook %v, can authenticate %v", c.AuthorizationModeToUse(), c.TokenWebhook(), c.CanAuthenticate())
				}
			},
		},
		{
			name: "standalone with client certificates",
			args: []string{"--client-ca-file", "/ca.crt"},
			check: func(t *testing.T, c *Config) {
				if !c.CanAuthenticate() || c.TokenWebhook() {
					t.Errorf("can authenticate %v, token webhook %v", c.CanAuthenticate(), c.TokenWebhook())
				}
			},
		},
		{
			name:    "anonymous with AlwaysAllow",
			args:    []string{"--anonymous-auth", "--client-ca-file", "/ca.crt"},
			wantErr: "--anonymous-auth (authentication.anonymous.enabled) with authorization mode AlwaysAllow",
		},
		{
			name:    "anonymous with AlwaysAllow in node mode",
			args:    []string{"--anonymous-auth", "--kubeconfig", "/k", "--authorization-mode", "AlwaysAllow"},
			wantErr: "lets anyone who reaches port 10250",
		},
		{name: "anonymous with Webhook", args: []string{"--anonymous-auth", "--kubeconfig", "/k"}},
		{name: "anonymous with the port off", args: []string{"--anonymous-auth", "--port", "0"}},
		{
			name:    "Webhook standalone",
			args:    []string{"--authorization-mode", "Webhook", "--client-ca-file", "/ca.crt"},
			wantErr: "--authorization-mode (authorization.mode) Webhook: needs --kubeconfig",
		},
		{name: "unknown mode", args: []string{"--authorization-mode", "RBAC"}, wantErr: `"RBAC" is not one of AlwaysAllow, Webhook`},
		{name: "rotation standalone", args: []string{"--rotate-server-certificates"}, wantErr: "--rotate-server-certificates (serverTLSBootstrap): needs --kubeconfig"},
		{
			name:    "rotation and files",
			args:    []string{"--rotate-server-certificates", "--kubeconfig", "/k", "--tls-cert-file", "/c", "--tls-private-key-file", "/k"},
			wantErr: "choose one source of the serving certificate",
		},
		{name: "certificate without key", args: []string{"--tls-cert-file", "/c"}, wantErr: "give both or neither"},
		{name: "port out of range", args: []string{"--port", "65536"}, wantErr: "--port (port): 65536 is not a port"},
		{name: "negative TTL", args: []string{"--authorization-webhook-cache-authorized-ttl", "-1s"}, wantErr: "--authorization-webhook-cache-authorized-ttl"},
		{name: "relative socket", args: []string{"--socket", "mk.sock"}, wantErr: "--socket"},
		{name: "socket off", args: []string{"--socket", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			c.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate = %v, want an error with %q", err, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, &c)
			}
		})
	}
}

// /configz serves the configuration as a kubelet config file: read back as
// one, it sets every field the file can set to the value in effect.
func TestKubeletConfigurationRoundTrips(t *testing.T) {
	c := Default()
	c.PodManifestPath, c.PodLogsDir = "/srv/manifests", "/srv/logs"
	c.ManifestURL = "http://10.0.0.1/pods"
	c.ManifestURLHeader = map[string][]string{"X-Node": {"n1"}}
	c.Address, c.Port, c.ReadOnlyPort, c.HealthzPort = "0.0.0.0", 10260, 10266, 10249
	c.TLSCertFile, c.TLSPrivateKeyFile, c.ClientCAFile = "/tls.crt", "/tls.key", "/ca.crt"
	c.AnonymousAuth, c.AuthenticationTokenWebhook, c.AuthorizationMode = true, false, AuthorizationWebhook
	c.AuthenticationTokenWebhookCacheTTL = time.Minute
	c.AuthorizationWebhookCacheAuthorizedTTL, c.AuthorizationWebhookCacheUnauthorizedTTL = time.Minute, 5*time.Second
	c.EnableDebuggingHandlers = false
	c.FeatureGates = map[string]bool{"EventedPLEG": true}
	c.MaxPods, c.CgroupDriver, c.CgroupsPerQOS, c.CgroupRoot = 50, "systemd", false, "/mk.slice"
	c.ShutdownGracePeriod, c.ShutdownGracePeriodCriticalPods = 30*time.Second, 10*time.Second
	c.ContainerLogMaxSize, c.ContainerLogMaxFiles, c.ContainerLogMonitorInterval = "50Mi", 3, time.Minute
	c.ImageGCHighThresholdPercent, c.ImageGCLowThresholdPercent, c.ImageMinimumGCAge = 90, 70, 5*time.Minute
	c.MaxContainerRestartPeriod = time.Minute
	c.ClusterDNS, c.ClusterDomain, c.ResolvConf = []string{"10.96.0.10"}, "cluster.local", ""
	c.RegisterWithTaints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}
	c.EvictionHard, c.EvictionSoft = map[string]string{"memory.available": "200Mi"}, map[string]string{"memory.available": "300Mi"}
	c.EvictionSoftGracePeriod, c.EvictionMinimumReclaim = map[string]string{"memory.available": "1m"}, map[string]string{"memory.available": "50Mi"}
	c.EvictionMaxPodGracePeriod, c.EvictionPressureTransitionPeriod, c.MergeDefaultEvictionSettings = 20, time.Minute, true
	c.KernelMemcgNotification, c.LocalStorageCapacityIsolation = true, false
	c.KubeReserved, c.SystemReserved = map[string]string{"cpu": "100m"}, map[string]string{"memory": "100Mi"}
	c.KubeReservedCgroup, c.SystemReservedCgroup = "/kube.slice", "/system.slice"
	c.EnforceNodeAllocatable = []string{"pods", "kube-reserved"}
	c.FailSwapOn, c.MemorySwapBehavior, c.PodPidsLimit = false, "NoSwap", 1024

	data, err := json.Marshal(c.KubeletConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := parseConfigFile("configz", data)
	if err != nil {
		t.Fatal(err)
	}
	want, got := Config{}, Config{}
	for _, f := range fileFields() {
		if f.take == nil {
			f.merge(&want, &c)
			f.merge(&got, &back)
			continue
		}
		f.take(&want, &c)
		f.take(&got, &back)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back:\n got %+v\nwant %+v", got, want)
	}
	if js := string(data); !strings.Contains(js, `"kind":"KubeletConfiguration"`) || !strings.Contains(js, `"apiVersion":"kubelet.config.k8s.io/v1beta1"`) {
		t.Errorf("configz lacks its kind and apiVersion: %s", js)
	}
}
