package agent

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
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
	RootDir               string
	PodLogsDir            string
	HostnameOverride      string
	NodeIP                string
	Address               string
	ReadOnlyPort          int
	HealthzBindAddress    string
	HealthzPort           int
	PLEGRelistPeriod      time.Duration
	// PLEGMode is auto, relist or evented.
	PLEGMode string
	// EventedPLEGRelistPeriod is the safety-net relist period in evented
	// mode.
	EventedPLEGRelistPeriod time.Duration
	// FeatureGates as the kubelet's --feature-gates; only EventedPLEG is
	// acted on.
	FeatureGates map[string]bool
	// MaxContainerRestartPeriod caps the crash-loop back-off.
	MaxContainerRestartPeriod time.Duration
	// Image garbage collection (package imagegc): the kubelet's
	// thresholds in percent of the image filesystem, the minimum age of
	// an unused image, how often a pass runs (the kubelet's is fixed at
	// 5m), and a sandbox image never to remove besides the runtime's.
	ImageGCHighThresholdPercent int
	ImageGCLowThresholdPercent  int
	ImageMinimumGCAge           time.Duration
	ImageGCPeriod               time.Duration
	PodInfraContainerImage      string
}

// DefaultConfig returns the kubelet's defaults.
func DefaultConfig() Config {
	return Config{
		PodManifestPath:           "/etc/kubernetes/manifests",
		FileCheckFrequency:        20 * time.Second,
		HTTPCheckFrequency:        20 * time.Second,
		SyncFrequency:             time.Minute,
		RuntimeEndpoint:           "unix:///run/containerd/containerd.sock",
		RuntimeRequestTimeout:     2 * time.Minute,
		RootDir:                   "/var/lib/minikubelet",
		PodLogsDir:                "/var/log/pods",
		Address:                   "127.0.0.1",
		ReadOnlyPort:              10255,
		HealthzBindAddress:        "127.0.0.1",
		HealthzPort:               10248,
		PLEGRelistPeriod:          time.Second,
		PLEGMode:                  PLEGModeAuto,
		EventedPLEGRelistPeriod:   time.Minute,
		MaxContainerRestartPeriod: 300 * time.Second,

		ImageGCHighThresholdPercent: 85,
		ImageGCLowThresholdPercent:  80,
		ImageMinimumGCAge:           2 * time.Minute,
		ImageGCPeriod:               5 * time.Minute,
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
	fs.StringVar(&c.RootDir, "root-dir", c.RootDir, "Directory for the agent's files: pod data under <root-dir>/pods/<uid>.")
	fs.StringVar(&c.PodLogsDir, "pod-logs-dir", c.PodLogsDir, "Directory of container logs: <pod-logs-dir>/<namespace>_<name>_<uid>/<container>/<restart>.log.")
	fs.StringVar(&c.HostnameOverride, "hostname-override", c.HostnameOverride, "The node name, used to name static pods (<pod>-<node>) and to derive their UIDs. Default: the host's name, lowercased.")
	fs.StringVar(&c.NodeIP, "node-ip", c.NodeIP, "The node's IP address, reported as hostIP. Default: the address of the interface of the default route.")
	fs.StringVar(&c.Address, "address", c.Address, "IP address the read-only port listens on.")
	fs.IntVar(&c.ReadOnlyPort, "read-only-port", c.ReadOnlyPort, "Port of the read-only endpoints (/pods, /healthz); 0 disables them.")
	fs.StringVar(&c.HealthzBindAddress, "healthz-bind-address", c.HealthzBindAddress, "IP address the healthz port listens on.")
	fs.IntVar(&c.HealthzPort, "healthz-port", c.HealthzPort, "Port of /healthz; 0 disables it.")
	fs.DurationVar(&c.PLEGRelistPeriod, "pleg-relist-period", c.PLEGRelistPeriod, "How often the runtime is relisted to notice containers that started, died or vanished (relist mode, and evented mode while its event stream is down).")
	fs.StringVar(&c.PLEGMode, "pleg-mode", c.PLEGMode, "How container changes are noticed: evented (the runtime's CRI event stream, GetContainerEvents, with a slow relist as a safety net), relist (list the runtime every --pleg-relist-period), or auto (evented when the runtime serves events, else relist).")
	fs.DurationVar(&c.EventedPLEGRelistPeriod, "evented-pleg-relist-period", c.EventedPLEGRelistPeriod, "How often evented mode still relists, as a safety net for events a runtime loses (containerd 1.7 shares one event stream among all subscribers).")
	fs.Var((*featureGates)(&c.FeatureGates), "feature-gates", "The kubelet's feature gates as Name=true|false pairs separated by commas. EventedPLEG=true selects --pleg-mode=evented and =false relist, unless --pleg-mode says otherwise; other gates are accepted and ignored.")
	fs.DurationVar(&c.MaxContainerRestartPeriod, "max-container-restart-period", c.MaxContainerRestartPeriod, "The longest crash-loop back-off between restarts of a failing container (it starts at 10s and doubles).")
	fs.IntVar(&c.ImageGCHighThresholdPercent, "image-gc-high-threshold", c.ImageGCHighThresholdPercent, "The image filesystem's usage in percent at which unused images are removed, least recently used first, down to --image-gc-low-threshold. Images of containers (running or exited), pinned images and the sandbox image are never removed. 100 turns image garbage collection off.")
	fs.IntVar(&c.ImageGCLowThresholdPercent, "image-gc-low-threshold", c.ImageGCLowThresholdPercent, "The image filesystem's usage in percent that image garbage collection frees down to; below --image-gc-high-threshold.")
	fs.DurationVar(&c.ImageMinimumGCAge, "minimum-image-ttl-duration", c.ImageMinimumGCAge, "How long after the agent first sees an unused image it may be removed (an image just pulled or imported is about to be used).")
	fs.DurationVar(&c.ImageGCPeriod, "image-gc-period", c.ImageGCPeriod, "How often image garbage collection checks the image filesystem (also once at start). Not a kubelet flag: the kubelet's period is fixed at 5m.")
	fs.StringVar(&c.PodInfraContainerImage, "pod-infra-container-image", c.PodInfraContainerImage, "A sandbox image that image garbage collection never removes, besides the runtime's own (pinned by containerd 2.x, read from the CRI config of containerd 1.6). The runtime's config chooses the sandbox image pods get.")
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
	errs = append(errs, c.validateImageGC()...)
	switch c.PLEGMode {
	case PLEGModeAuto, PLEGModeRelist, PLEGModeEvented:
	default:
		errs = append(errs, fmt.Errorf("--pleg-mode: %q is not one of auto, relist, evented", c.PLEGMode))
	}
	if c.ManifestURL != "" {
		if u, err := url.Parse(c.ManifestURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--manifest-url: %q must be an http:// or https:// URL", c.ManifestURL))
		}
	}
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

// plegMode is the mode to run: --pleg-mode, unless it is auto and the
// EventedPLEG feature gate is given.
func (c *Config) plegMode() string {
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

// nodeName is --hostname-override or the host's name, lowercased as the
// kubelet does.
func (c *Config) nodeName() (string, error) {
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
