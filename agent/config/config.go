package config

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/agent/shutdown"
	"github.com/minikubelet/minikubelet/cgroups"
)

// Config is the agent's configuration. Its flag names and defaults are the
// kubelet's.
type Config struct {
	PodManifestPath       string
	FileCheckFrequency    time.Duration
	ManifestURL           string
	ManifestURLHeader     http.Header
	HTTPCheckFrequency    time.Duration
	SyncFrequency         time.Duration
	RuntimeEndpoint       string
	RuntimeRequestTimeout time.Duration
	// MaxParallelSandboxStarts is how many RunPodSandbox calls run at
	// once: 0 for one per CPU (at least 2), negative for all at once.
	MaxParallelSandboxStarts int
	RootDir                  string
	PodLogsDir               string
	HostnameOverride         string
	NodeIP                   string
	Address                  string
	ReadOnlyPort             int
	HealthzBindAddress       string
	HealthzPort              int
	PLEGRelistPeriod         time.Duration
	// PLEGMode is auto, relist or evented.
	PLEGMode string
	// EventedPLEGRelistPeriod is the safety-net relist period in evented
	// mode.
	EventedPLEGRelistPeriod time.Duration
	// FeatureGates as the kubelet's --feature-gates; only EventedPLEG and
	// PodLogsQuerySplitStreams are acted on.
	FeatureGates map[string]bool
	// MaxContainerRestartPeriod caps the crash-loop back-off.
	MaxContainerRestartPeriod time.Duration
	// ShutdownGracePeriod is how long a shutdown of the node is delayed to
	// terminate pods gracefully; 0 turns graceful node shutdown off.
	ShutdownGracePeriod time.Duration
	// ShutdownGracePeriodCriticalPods is the part of ShutdownGracePeriod
	// kept for critical pods, which are terminated last.
	ShutdownGracePeriodCriticalPods time.Duration
	// LogindConfDir is where the logind drop-in raising InhibitDelayMaxSec
	// to ShutdownGracePeriod is written.
	LogindConfDir string
	// CgroupRoot, CgroupsPerQOS and CgroupDriver are the kubelet's
	// --cgroup-root, --cgroups-per-qos and --cgroup-driver.
	CgroupRoot    string
	CgroupsPerQOS bool
	CgroupDriver  string
	// CgroupV1BlkioAccounting turns block I/O accounting on for every
	// disk on cgroup v1 (cgroups.Config.BlkioAccounting).
	CgroupV1BlkioAccounting bool
	// ConfigFile is --config: a KubeletConfiguration file whose fields fill
	// in what the command line leaves out (LoadFile, file.go).
	ConfigFile string
	// ContainerLogMaxSize (a resource quantity such as 10Mi) and
	// ContainerLogMaxFiles rotate container logs.
	ContainerLogMaxSize  string
	ContainerLogMaxFiles int
	// ContainerLogMonitorInterval is how often logs are checked for
	// rotation.
	ContainerLogMonitorInterval time.Duration
	// Image garbage collection (package imagegc): the kubelet's
	// thresholds in percent of the image filesystem, the minimum age of
	// an unused image, how often a pass runs (the kubelet's is fixed at
	// 5m), and a sandbox image never to remove besides the runtime's.
	ImageGCHighThresholdPercent int
	ImageGCLowThresholdPercent  int
	ImageMinimumGCAge           time.Duration
	ImageGCPeriod               time.Duration
	PodInfraContainerImage      string
	// NodeConfig is node mode's configuration (node.go).
	NodeConfig
	// ServerConfig is the endpoints' configuration (server.go).
	ServerConfig
	// DNSConfig is pods' DNS (dns.go).
	DNSConfig
	// EvictionConfig is node-pressure eviction (eviction.go).
	EvictionConfig
	// AllocatableConfig is node allocatable and swap (allocatable.go).
	AllocatableConfig
	// PodsConfig is what pods may ask for (pods.go).
	PodsConfig
}

// Default returns the kubelet's defaults.
func Default() Config {
	return Config{
		PodManifestPath:             "/etc/kubernetes/manifests",
		FileCheckFrequency:          20 * time.Second,
		HTTPCheckFrequency:          20 * time.Second,
		SyncFrequency:               time.Minute,
		RuntimeEndpoint:             "unix:///run/containerd/containerd.sock",
		RuntimeRequestTimeout:       2 * time.Minute,
		RootDir:                     "/var/lib/minikubelet",
		PodLogsDir:                  "/var/log/pods",
		Address:                     "127.0.0.1",
		ReadOnlyPort:                10255,
		HealthzBindAddress:          "127.0.0.1",
		HealthzPort:                 10248,
		PLEGRelistPeriod:            time.Second,
		PLEGMode:                    PLEGModeAuto,
		EventedPLEGRelistPeriod:     time.Minute,
		MaxContainerRestartPeriod:   300 * time.Second,
		LogindConfDir:               shutdown.DefaultLogindConfDir,
		CgroupRoot:                  "/",
		CgroupsPerQOS:               true,
		CgroupDriver:                cgroups.DriverCgroupfs,
		CgroupV1BlkioAccounting:     true,
		ContainerLogMaxSize:         "10Mi",
		ContainerLogMaxFiles:        5,
		ContainerLogMonitorInterval: 10 * time.Second,
		ImageGCHighThresholdPercent: 85,
		ImageGCLowThresholdPercent:  80,
		ImageMinimumGCAge:           2 * time.Minute,
		ImageGCPeriod:               5 * time.Minute,
		NodeConfig:                  defaultNodeConfig(),
		ServerConfig:                defaultServerConfig(),
		DNSConfig:                   defaultDNSConfig(),
		EvictionConfig:              defaultEvictionConfig(),
		AllocatableConfig:           defaultAllocatableConfig(),
	}
}

// AddFlags registers the configuration's flags on fs, with c's current
// values as defaults.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.PodManifestPath, "pod-manifest-path", c.PodManifestPath, "Directory of static pod manifests: every *.yaml, *.yml and *.json file in it holds one v1 Pod, run on this node. Dot files and editor temp files are ignored.")
	fs.DurationVar(&c.FileCheckFrequency, "file-check-frequency", c.FileCheckFrequency, "How often the manifest directory is rescanned in full, as a safety net behind the filesystem notifications that are normally seen within a second.")
	fs.StringVar(&c.ManifestURL, "manifest-url", c.ManifestURL, "URL of more static pods: the body is one v1 Pod or a v1 PodList, JSON or YAML, fetched every --http-check-frequency. On an error the last good set of pods keeps running.")
	fs.Var((*headerFlag)(&c.ManifestURLHeader), "manifest-url-header", "HTTP headers for --manifest-url, as 'Key:Value' pairs separated by commas; may be repeated, e.g. --manifest-url-header 'Authorization:Bearer x,X-Node:n1'.")
	fs.DurationVar(&c.HTTPCheckFrequency, "http-check-frequency", c.HTTPCheckFrequency, "How often --manifest-url is fetched.")
	fs.DurationVar(&c.SyncFrequency, "sync-frequency", c.SyncFrequency, "How often each running pod is synced against the runtime even when nothing changed (with up to 50% jitter).")
	fs.StringVar(&c.RuntimeEndpoint, "container-runtime-endpoint", c.RuntimeEndpoint, "The CRI endpoint of the container runtime, e.g. unix:///run/containerd/containerd.sock. The agent waits for it when it is not up yet.")
	fs.DurationVar(&c.RuntimeRequestTimeout, "runtime-request-timeout", c.RuntimeRequestTimeout, "Timeout of every CRI request except long-running ones (image pulls, stops, which add their own time).")
	fs.IntVar(&c.MaxParallelSandboxStarts, "max-parallel-sandbox-starts", c.MaxParallelSandboxStarts, "How many pod sandboxes are made at once (CRI RunPodSandbox); the pods beyond wait their turn, first come first served, so that in a burst the first pods run sooner and none later: a sandbox is CPU and kernel work that does not go faster for being asked for many times at once. A call still running after 10s gives its turn up. 0: one per CPU, at least 2; negative: no limit, as the kubelet. Not a kubelet flag.")
	fs.StringVar(&c.RootDir, "root-dir", c.RootDir, "Directory for the agent's files: pod data under <root-dir>/pods/<uid>.")
	fs.StringVar(&c.PodLogsDir, "pod-logs-dir", c.PodLogsDir, "Directory of container logs: <pod-logs-dir>/<namespace>_<name>_<uid>/<container>/<restart>.log.")
	fs.StringVar(&c.HostnameOverride, "hostname-override", c.HostnameOverride, "The node name, used to name static pods (<pod>-<node>) and to derive their UIDs. Default: the host's name, lowercased.")
	fs.StringVar(&c.NodeIP, "node-ip", c.NodeIP, "The node's IP address, reported as hostIP. Default: the address of the interface of the default route.")
	fs.StringVar(&c.Address, "address", c.Address, "IP address the kubelet port and the read-only port listen on (a config file defaults it to 0.0.0.0, as the kubelet).")
	fs.IntVar(&c.ReadOnlyPort, "read-only-port", c.ReadOnlyPort, "Port of the read-only endpoints (/pods, /healthz); 0 disables them.")
	fs.StringVar(&c.HealthzBindAddress, "healthz-bind-address", c.HealthzBindAddress, "IP address the healthz port listens on.")
	fs.IntVar(&c.HealthzPort, "healthz-port", c.HealthzPort, "Port of /healthz; 0 disables it.")
	fs.DurationVar(&c.PLEGRelistPeriod, "pleg-relist-period", c.PLEGRelistPeriod, "How often the runtime is relisted to notice containers that started, died or vanished (relist mode, and evented mode while its event stream is down).")
	fs.StringVar(&c.PLEGMode, "pleg-mode", c.PLEGMode, "How container changes are noticed: evented (the runtime's CRI event stream, GetContainerEvents, with a slow relist as a safety net), relist (list the runtime every --pleg-relist-period), or auto (evented when the runtime serves events, else relist).")
	fs.DurationVar(&c.EventedPLEGRelistPeriod, "evented-pleg-relist-period", c.EventedPLEGRelistPeriod, "How often evented mode still relists, as a safety net for events a runtime loses (containerd 1.7 shares one event stream among all subscribers).")
	fs.Var((*featureGates)(&c.FeatureGates), "feature-gates", "The kubelet's feature gates as Name=true|false pairs separated by commas. EventedPLEG=true selects --pleg-mode=evented and =false relist, unless --pleg-mode says otherwise; PodLogsQuerySplitStreams=true lets /containerLogs serve one stream (?stream=Stdout|Stderr); other gates are accepted and ignored.")
	fs.DurationVar(&c.MaxContainerRestartPeriod, "max-container-restart-period", c.MaxContainerRestartPeriod, "The longest crash-loop back-off between restarts of a failing container (it starts at 10s and doubles).")
	fs.IntVar(&c.ImageGCHighThresholdPercent, "image-gc-high-threshold", c.ImageGCHighThresholdPercent, "The image filesystem's usage in percent at which unused images are removed, least recently used first, down to --image-gc-low-threshold. Images of containers (running or exited), pinned images and the sandbox image are never removed. 100 turns image garbage collection off.")
	fs.IntVar(&c.ImageGCLowThresholdPercent, "image-gc-low-threshold", c.ImageGCLowThresholdPercent, "The image filesystem's usage in percent that image garbage collection frees down to; below --image-gc-high-threshold.")
	fs.DurationVar(&c.ImageMinimumGCAge, "minimum-image-ttl-duration", c.ImageMinimumGCAge, "How long after the agent first sees an unused image it may be removed (an image just pulled or imported is about to be used).")
	fs.DurationVar(&c.ImageGCPeriod, "image-gc-period", c.ImageGCPeriod, "How often image garbage collection checks the image filesystem (also once at start). Not a kubelet flag: the kubelet's period is fixed at 5m.")
	fs.StringVar(&c.PodInfraContainerImage, "pod-infra-container-image", c.PodInfraContainerImage, "A sandbox image that image garbage collection never removes, besides the runtime's own (pinned by containerd 2.x, read from the CRI config of containerd 1.6). The runtime's config chooses the sandbox image pods get.")
	fs.StringVar(&c.ConfigFile, "config", c.ConfigFile, "A KubeletConfiguration file (apiVersion: kubelet.config.k8s.io/v1beta1). Its fields set what the command line does not: a flag given on the command line wins over the file. Fields minikubelet does not implement are named in a warning; a misspelled field or a bad value stops the start.")
	fs.StringVar(&c.ContainerLogMaxSize, "container-log-max-size", c.ContainerLogMaxSize, "The size, a resource quantity such as 10Mi, at which a container's log is rotated.")
	fs.IntVar(&c.ContainerLogMaxFiles, "container-log-max-files", c.ContainerLogMaxFiles, "How many log files a container keeps, at least 2: the current one and rotated ones (the newest plain, older ones gzipped).")
	fs.DurationVar(&c.ContainerLogMonitorInterval, "container-log-monitor-interval", c.ContainerLogMonitorInterval, "How often running containers' logs are checked against --container-log-max-size (the kubelet's containerLogMonitorInterval).")
	fs.StringVar(&c.CgroupRoot, "cgroup-root", c.CgroupRoot, "The cgroup below which pods' cgroups are made (<root>/kubepods/...); created when missing. With --cgroup-driver=systemd, \"/\" or a slice such as /minikubelet.slice.")
	fs.BoolVar(&c.CgroupsPerQOS, "cgroups-per-qos", c.CgroupsPerQOS, "Give each pod a cgroup of its own, with its cpu and memory limits, in a cgroup per QoS class (<root>/kubepods, .../burstable, .../besteffort). When false, pods' sandboxes get --cgroup-root as cgroup parent.")
	fs.StringVar(&c.CgroupDriver, "cgroup-driver", c.CgroupDriver, "How cgroups are named and made: cgroupfs or systemd; it must match the runtime's. A runtime that says its driver (containerd 2.x, through CRI RuntimeConfig) is followed instead.")
	fs.BoolVar(&c.CgroupV1BlkioAccounting, "cgroup-v1-blkio-accounting", c.CgroupV1BlkioAccounting, "On cgroup v1, write a throttle rule that limits nothing (MAJ:MIN 0) for every disk into <root>/kubepods, because Linux 6.10 and later keep per-cgroup block I/O counters only for disks with throttling set up. It turns the counting on for the whole disk until reboot and cannot be undone; when false, block I/O metrics read 0 on such kernels. No effect on cgroup v2.")
	fs.DurationVar(&c.ShutdownGracePeriod, "shutdown-grace-period", c.ShutdownGracePeriod, "How long a shutdown of the node is delayed, through a delay inhibitor lock of systemd-logind on the system bus ($DBUS_SYSTEM_BUS_ADDRESS), to terminate every pod gracefully, critical pods last. Pods so terminated report phase Failed, reason Terminated; if the shutdown is cancelled they start again. 0 turns graceful node shutdown off: stopping the agent, or the node, leaves pods to the system.")
	fs.DurationVar(&c.ShutdownGracePeriodCriticalPods, "shutdown-grace-period-critical-pods", c.ShutdownGracePeriodCriticalPods, "The part of --shutdown-grace-period kept for critical pods (priorityClassName system-node-critical or system-cluster-critical), which are terminated after the others. At most --shutdown-grace-period.")
	fs.StringVar(&c.LogindConfDir, "logind-conf-dir", c.LogindConfDir, "Directory of systemd-logind drop-ins: when logind's InhibitDelayMaxSec is shorter than --shutdown-grace-period, the agent writes 99-minikubelet.conf there raising it, and has logind reload.")
	c.addNodeFlags(fs)
	c.addServerFlags(fs)
	c.addDNSFlags(fs)
	c.addEvictionFlags(fs)
	c.addAllocatableFlags(fs)
	c.addPodsFlags(fs)
}

// SandboxStartWindow is MaxParallelSandboxStarts resolved: how many
// sandboxes are made at once, 0 for no limit.
func (c *Config) SandboxStartWindow() int {
	switch {
	case c.MaxParallelSandboxStarts < 0:
		return 0
	case c.MaxParallelSandboxStarts == 0:
		return max(2, runtime.NumCPU())
	default:
		return c.MaxParallelSandboxStarts
	}
}

// Validate reports every bad value, each naming its flag.
func (c *Config) Validate() error {
	var errs []error
	positive := []struct {
		flag string
		d    time.Duration
	}{
		{"file-check-frequency", c.FileCheckFrequency},
		{"http-check-frequency", c.HTTPCheckFrequency},
		{"sync-frequency", c.SyncFrequency},
		{"runtime-request-timeout", c.RuntimeRequestTimeout},
		{"pleg-relist-period", c.PLEGRelistPeriod},
		{"evented-pleg-relist-period", c.EventedPLEGRelistPeriod},
		{"max-container-restart-period", c.MaxContainerRestartPeriod},
		{"container-log-monitor-interval", c.ContainerLogMonitorInterval},
		{"image-gc-period", c.ImageGCPeriod},
	}
	for _, p := range positive {
		if p.d <= 0 {
			errs = append(errs, fmt.Errorf("--%s: must be positive, got %v", p.flag, p.d))
		}
	}
	for _, p := range []struct {
		flag string
		port int
	}{{"read-only-port", c.ReadOnlyPort}, {"healthz-port", c.HealthzPort}} {
		if p.port < 0 || p.port > 65535 {
			errs = append(errs, fmt.Errorf("--%s: %d is not a port (0 disables)", p.flag, p.port))
		}
	}
	if !strings.HasPrefix(c.RuntimeEndpoint, "unix://") && !strings.HasPrefix(c.RuntimeEndpoint, "/") {
		errs = append(errs, fmt.Errorf("--container-runtime-endpoint: %q must be unix:///path/to/socket", c.RuntimeEndpoint))
	}
	for _, d := range []struct{ flag, path string }{{"root-dir", c.RootDir}, {"pod-logs-dir", c.PodLogsDir}, {"pod-manifest-path", c.PodManifestPath}} {
		if d.path == "" {
			errs = append(errs, fmt.Errorf("--%s: must not be empty", d.flag))
		}
	}
	switch c.CgroupDriver {
	case cgroups.DriverCgroupfs, cgroups.DriverSystemd:
	default:
		errs = append(errs, fmt.Errorf("--cgroup-driver: %q is not one of cgroupfs, systemd", c.CgroupDriver))
	}
	if c.CgroupRoot == "" || (c.CgroupDriver == cgroups.DriverCgroupfs && !strings.HasPrefix(c.CgroupRoot, "/")) {
		errs = append(errs, fmt.Errorf("--cgroup-root: %q must be an absolute cgroup path such as / or /minikubelet", c.CgroupRoot))
	}
	if c.ShutdownGracePeriod < 0 || c.ShutdownGracePeriodCriticalPods < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-grace-period and --shutdown-grace-period-critical-pods: must not be negative, got %v and %v", c.ShutdownGracePeriod, c.ShutdownGracePeriodCriticalPods))
	} else if c.ShutdownGracePeriodCriticalPods > c.ShutdownGracePeriod {
		errs = append(errs, fmt.Errorf("--shutdown-grace-period-critical-pods: %v exceeds --shutdown-grace-period %v, of which it is a part", c.ShutdownGracePeriodCriticalPods, c.ShutdownGracePeriod))
	}
	if c.ShutdownGracePeriod > 0 && c.LogindConfDir == "" {
		errs = append(errs, errors.New("--logind-conf-dir: must not be empty with --shutdown-grace-period"))
	}
	errs = append(errs, c.validateServer()...)
	errs = append(errs, c.validateImageGC()...)
	switch c.PLEGMode {
	case PLEGModeAuto, PLEGModeRelist, PLEGModeEvented:
	default:
		errs = append(errs, fmt.Errorf("--pleg-mode: %q is not one of auto, relist, evented", c.PLEGMode))
	}
	errs = append(errs, c.validateNodeSettings()...)
	if c.ManifestURL != "" {
		if u, err := url.Parse(c.ManifestURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--manifest-url: %q must be an http:// or https:// URL", c.ManifestURL))
		}
	}
	errs = append(errs, c.validateNode()...)
	errs = append(errs, c.validateDNS()...)
	errs = append(errs, c.validateEviction()...)
	errs = append(errs, c.validateAllocatable(c.CgroupsPerQOS)...)
	errs = append(errs, c.validatePods()...)
	return errors.Join(errs...)
}

// validateImageGC checks 0 <= low < high <= 100 and a minimum age that is
// not negative, as the kubelet does.
func (c *Config) validateImageGC() []error {
	var errs []error
	for _, p := range []struct {
		flag    string
		percent int
	}{{"image-gc-high-threshold", c.ImageGCHighThresholdPercent}, {"image-gc-low-threshold", c.ImageGCLowThresholdPercent}} {
		if p.percent < 0 || p.percent > 100 {
			errs = append(errs, fmt.Errorf("--%s: %d is not a percentage from 0 to 100", p.flag, p.percent))
		}
	}
	if c.ImageGCLowThresholdPercent >= c.ImageGCHighThresholdPercent {
		errs = append(errs, fmt.Errorf("--image-gc-low-threshold: %d must be below --image-gc-high-threshold (%d)", c.ImageGCLowThresholdPercent, c.ImageGCHighThresholdPercent))
	}
	if c.ImageMinimumGCAge < 0 {
		errs = append(errs, fmt.Errorf("--minimum-image-ttl-duration: must not be negative, got %v", c.ImageMinimumGCAge))
	}
	return errs
}

// PLEG modes (--pleg-mode).
const (
	PLEGModeAuto    = "auto"
	PLEGModeRelist  = "relist"
	PLEGModeEvented = "evented"
)

// PLEGModeToRun is the mode to run: --pleg-mode, unless it is auto and the
// EventedPLEG feature gate is given.
func (c *Config) PLEGModeToRun() string {
	if on, ok := c.FeatureGates["EventedPLEG"]; ok && c.PLEGMode == PLEGModeAuto {
		if on {
			return PLEGModeEvented
		}
		return PLEGModeRelist
	}
	return c.PLEGMode
}

// featureGates is the kubelet's --feature-gates: Name=bool pairs separated
// by commas; repeatable.
type featureGates map[string]bool

func (f *featureGates) String() string {
	if f == nil || *f == nil {
		return ""
	}
	var pairs []string
	for k, v := range *f {
		pairs = append(pairs, fmt.Sprintf("%s=%t", k, v))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

func (f *featureGates) Set(s string) error {
	if *f == nil {
		*f = featureGates{}
	}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		b, err := strconv.ParseBool(strings.TrimSpace(value))
		if !ok || err != nil {
			return fmt.Errorf("%q is not Name=true|false", pair)
		}
		(*f)[strings.TrimSpace(name)] = b
	}
	return nil
}

// headerFlag is a repeatable flag of comma-separated Key:Value pairs, as the
// kubelet's --manifest-url-header.
type headerFlag http.Header

func (h *headerFlag) String() string {
	if h == nil || *h == nil {
		return ""
	}
	var pairs []string
	for k, vs := range *h {
		for _, v := range vs {
			pairs = append(pairs, k+":"+v)
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

func (h *headerFlag) Set(s string) error {
	if *h == nil {
		*h = headerFlag{}
	}
	for _, pair := range strings.Split(s, ",") {
		key, value, ok := strings.Cut(pair, ":")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return fmt.Errorf("%q is not Key:Value", pair)
		}
		http.Header(*h).Add(key, strings.TrimSpace(value))
	}
	return nil
}

// NodeName is --hostname-override or the host's name, lowercased as the
// kubelet does.
func (c *Config) NodeName() (string, error) {
	name := c.HostnameOverride
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("node name: %w (set --hostname-override)", err)
		}
		name = h
	}
	return strings.ToLower(strings.TrimSpace(name)), nil
}
