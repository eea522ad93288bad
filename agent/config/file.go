package config

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/minikubelet/minikubelet/agent/admission"
	"github.com/minikubelet/minikubelet/internal/boundedyaml"
)

// The config file is the kubelet's: a KubeletConfiguration of this version.
const (
	configAPIVersion = "kubelet.config.k8s.io/v1beta1"
	configKind       = "KubeletConfiguration"
)

// LoadFile applies the KubeletConfiguration file named by --config to c,
// which holds the defaults with the command line fs parsed on top. Each
// field minikubelet implements (fileFields) sets its Config field, unless
// the field's flag was given on the command line: a flag wins over the
// file. featureGates merge, a gate given by flag winning over the file's.
// A field the file leaves out takes the kubelet's default for a config
// file, which is the flag's default except for readOnlyPort (0: disabled).
//
// Fields the kubelet knows and minikubelet does not implement are named in
// the one warning returned, for the caller to log as a warning. Every
// mistake is returned at once, joined, one line each and each naming the
// file and the field: the file unreadable or not YAML, a wrong apiVersion
// or kind, a field the KubeletConfiguration does not have, a value of the
// wrong type or out of range. LoadFile does nothing when --config is not
// set.
func (c *Config) LoadFile(fs *flag.FlagSet) (warnings []string, err error) {
	if c.ConfigFile == "" {
		return nil, nil
	}
	fromFile, ignored, err := readConfigFile(c.ConfigFile)
	if err != nil {
		return nil, err
	}
	if len(ignored) > 0 {
		warnings = append(warnings, fmt.Sprintf("config file %s: ignored: %s (minikubelet does not implement them)", c.ConfigFile, strings.Join(ignored, ", ")))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, f := range fileFields() {
		if f.merge != nil {
			f.merge(c, &fromFile)
		} else if !given[f.flag] {
			f.take(c, &fromFile)
		}
	}
	return warnings, nil
}

// fileDefaults is the Config a config file's fields are applied to: the
// kubelet's defaults for a config file.
func fileDefaults() Config {
	c := Default()
	// The kubelet's --read-only-port defaults to 10255 only for the command
	// line; a config file that does not name it turns the port off.
	c.ReadOnlyPort = 0
	// The kubelet listens on every address; minikubelet's --address
	// defaults to loopback, where the read-only port is on. A config file
	// turns that port off, and its address is the kubelet's: a cluster's
	// apiserver must reach the kubelet port.
	c.Address = "0.0.0.0"
	return c
}

// maxConfigSize is the largest config file read; a KubeletConfiguration
// is a few kilobytes.
const maxConfigSize = 1 << 20

// configYAMLLimits bound the work of decoding a config file (see
// boundedyaml): far above what a KubeletConfiguration of a few hundred
// fields and feature gates needs.
var configYAMLLimits = boundedyaml.Limits{MaxIndicators: 20_000, MaxExpanded: maxConfigSize, MaxNodes: 20_000, MaxDepth: 100}

// readConfigFile reads and checks the KubeletConfiguration at path. It
// returns fileDefaults with the file's fields applied, and the top-level
// fields of the file that minikubelet ignores, sorted.
func readConfigFile(path string) (Config, []string, error) {
	data, err := readAtMost(path, maxConfigSize)
	if err != nil {
		return Config{}, nil, fmt.Errorf("config file: %w (check --config)", err)
	}
	if len(data) > maxConfigSize {
		return Config{}, nil, fmt.Errorf("config file %s: larger than %d bytes; a KubeletConfiguration is a few kilobytes (check --config)", path, maxConfigSize)
	}
	return parseConfigFile(path, data)
}

// readAtMost reads at most limit+1 bytes of the file at path.
func readAtMost(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path) //nolint:gosec // G304: the file the user named with --config
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// parseConfigFile is readConfigFile on data, the content of the file at
// path.
func parseConfigFile(path string, data []byte) (Config, []string, error) {
	kc, top, err := decodeConfig(data)
	if kc == nil {
		return Config{}, nil, prefixErrors(path, err)
	}
	// The fields that decoded were applied all the same: their bad values
	// are reported with the fields that did not decode, all mistakes at
	// once, in the order of the fields' names.
	c, valueErr := applyConfig(kc)
	if err := errors.Join(err, valueErr); err != nil {
		all := flatten(err)
		slices.SortStableFunc(all, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return Config{}, nil, prefixErrors(path, errors.Join(all...))
	}
	return c, ignoredFields(top), nil
}

// Bounds on the errors reported for a config file: how many lines, and
// how long each may be.
const (
	maxConfigErrors   = 20
	maxConfigErrorLen = 1024
	// maxFieldNameLen is how much of an unknown field's name is quoted.
	maxFieldNameLen = 256
)

// prefixErrors puts "config file PATH: " before each of the errors joined
// (at any depth) in err, one per line: at most maxConfigErrors of them,
// each shortened to maxConfigErrorLen bytes (a misspelled field of a
// megabyte is quoted in part).
func prefixErrors(path string, err error) error {
	all := flatten(err)
	var out []error
	for i, e := range all {
		if i == maxConfigErrors {
			out = append(out, fmt.Errorf("config file %s: and %d more errors", path, len(all)-i))
			break
		}
		if msg := e.Error(); len(msg) > maxConfigErrorLen {
			e = fmt.Errorf("%s... (%d bytes)", strings.ToValidUTF8(msg[:maxConfigErrorLen], ""), len(msg))
		}
		out = append(out, fmt.Errorf("config file %s: %w", path, e))
	}
	return errors.Join(out...)
}

// flatten returns the errors that err joins, joins within joins included,
// or err alone.
func flatten(err error) []error {
	// Only a join itself is taken apart, never what an error wraps.
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range joined.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}

// decodeConfig decodes a KubeletConfiguration strictly: YAML with no
// duplicate keys, the right apiVersion and kind, and no field the type does
// not have. It also returns the file's top-level fields. When the only
// errors are unknown fields, the decoded configuration is returned with
// them.
func decodeConfig(data []byte) (*KubeletConfiguration, map[string]json.RawMessage, error) {
	js, err := boundedyaml.ToJSON(data, configYAMLLimits)
	var limitErr *boundedyaml.LimitError
	switch {
	case errors.As(err, &limitErr):
		return nil, nil, err
	case err != nil:
		// One line, so that every line of the message names the file.
		return nil, nil, fmt.Errorf("not valid YAML: %s", strings.Join(strings.Fields(err.Error()), " "))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil || top == nil {
		return nil, nil, fmt.Errorf("not a KubeletConfiguration: want a YAML mapping that starts with apiVersion: %s and kind: %s", configAPIVersion, configKind)
	}
	var errs []error
	for _, want := range []struct{ field, value string }{{"apiVersion", configAPIVersion}, {"kind", configKind}} {
		var got string
		raw, ok := top[want.field]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: missing; want %s: %s", want.field, want.field, want.value))
		case json.Unmarshal(raw, &got) != nil || got != want.value:
			errs = append(errs, fmt.Errorf("%s: %s is not supported; want %s: %s", want.field, raw, want.field, want.value))
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	kc := &KubeletConfiguration{}
	strictErrs, err := sigsjson.UnmarshalStrict(js, kc, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		// A value of the wrong type stops the decoder at the first one,
		// and its error does not always name the field: decode field by
		// field instead, so that every mistake is found at once.
		return decodeByField(top)
	}
	errs = append(errs, strictErrors(strictErrs, js)...)
	return kc, top, errors.Join(errs...)
}

// strictErrors explains the strict decoder's complaints about js, a
// KubeletConfiguration: fields it has twice, and fields that are not the
// kubelet's. A field of the kubelet's that minikubelet's type leaves out is
// no mistake (ignoredFields warns of it), but what it holds is checked
// against the kubelet's field names all the same.
func strictErrors(strictErrs []error, js []byte) []error {
	var out []error
	var doc any
	for _, e := range strictErrs {
		kind, path, ok := strictComplaint(e)
		if !ok || kind != "unknown field" || !isKubeletField(path) {
			out = append(out, unknownField(e))
			continue
		}
		if doc == nil {
			if err := json.Unmarshal(js, &doc); err != nil {
				return append(out, err)
			}
		}
		for _, p := range notKubeletFields(path, valueAt(doc, path)) {
			out = append(out, unknownField(fmt.Errorf("unknown field %q", p)))
		}
	}
	return out
}

// strictComplaint takes apart an error of sigs.k8s.io/json's strict
// decoding: `unknown field "a.b"` or `duplicate field "a"`.
func strictComplaint(err error) (kind, path string, ok bool) {
	msg := err.Error()
	for _, kind := range []string{"unknown field", "duplicate field"} {
		if path, ok := strings.CutPrefix(msg, kind+" "); ok {
			if unquoted, uErr := strconv.Unquote(path); uErr == nil {
				path = unquoted
			}
			return kind, path, true
		}
	}
	return "", "", false
}

// unknownField explains a field the KubeletConfiguration does not have (or
// has twice), starting with the field's path as every other line does.
func unknownField(err error) error {
	kind, path, ok := strictComplaint(err)
	if !ok {
		return fmt.Errorf("%w (check the field's spelling, case and indentation)", err)
	}
	if len(path) > maxFieldNameLen {
		path = fmt.Sprintf("%s... (a %d-byte name)", strings.ToValidUTF8(path[:maxFieldNameLen], ""), len(path))
	}
	if kind == "duplicate field" {
		return fmt.Errorf("%s: given twice", path)
	}
	return fmt.Errorf("%s: unknown field: the KubeletConfiguration (%s) has no such field; check its spelling, case and indentation", path, configAPIVersion)
}

// decodeByField decodes each top-level field of a KubeletConfiguration on
// its own. A field whose value does not decode (a bad duration, a string
// for a number) is reported and left out; the others are decoded together,
// their unknown subfields reported, so that their values can be checked
// too. Fields are taken in the order of their names.
func decodeByField(top map[string]json.RawMessage) (*KubeletConfiguration, map[string]json.RawMessage, error) {
	names := make([]string, 0, len(top))
	for name := range top {
		names = append(names, name)
	}
	slices.Sort(names)
	good := map[string]json.RawMessage{}
	var errs []error
	for _, name := range names {
		one, err := json.Marshal(map[string]json.RawMessage{name: top[name]})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		strictErrs, err := sigsjson.UnmarshalStrict(one, &KubeletConfiguration{}, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s (durations are written 20s or 1m30s; numbers and booleans without quotes)", name, strings.TrimPrefix(err.Error(), "json: ")))
			continue
		}
		errs = append(errs, strictErrors(strictErrs, one)...)
		good[name] = top[name]
	}
	js, err := json.Marshal(good)
	if err != nil {
		return nil, nil, err
	}
	kc := &KubeletConfiguration{}
	if _, err := sigsjson.UnmarshalStrict(js, kc); err != nil {
		// Each field decoded alone; together they cannot fail.
		return nil, nil, errors.Join(append(errs, err)...)
	}
	return kc, top, errors.Join(errs...)
}

// applyConfig maps the decoded file onto fileDefaults, checking each value
// it takes; the errors name the file's fields.
func applyConfig(kc *KubeletConfiguration) (Config, error) {
	c := fileDefaults()
	var errs []error
	for _, f := range fileFields() {
		if err := f.set(&c, kc); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.name, err))
		}
	}
	if len(errs) == 0 {
		if err := checkCriticalGrace(c.ShutdownGracePeriodCriticalPods, c.ShutdownGracePeriod, "shutdownGracePeriod"); err != nil {
			errs = append(errs, fmt.Errorf("shutdownGracePeriodCriticalPods: %w", err))
		}
		if err := checkGCThresholds(c.ImageGCLowThresholdPercent, c.ImageGCHighThresholdPercent, "imageGCHighThresholdPercent"); err != nil {
			errs = append(errs, fmt.Errorf("imageGCLowThresholdPercent: %w", err))
		}
		if err := checkSoftGrace(&c); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}

// ignoredFields returns the file's fields that no fileField reads, apart
// from apiVersion and kind, sorted; a field of which only some subfields
// are read (authentication.x509.clientCAFile) is named by the subfields it
// has that are not.
func ignoredFields(top map[string]json.RawMessage) []string {
	known := map[string]bool{"apiVersion": true, "kind": true}
	for _, f := range fileFields() {
		known[f.name] = true
	}
	var out []string
	var walk func(prefix string, fields map[string]json.RawMessage)
	walk = func(prefix string, fields map[string]json.RawMessage) {
		for name, raw := range fields {
			path := prefix + name
			if known[path] {
				continue
			}
			partly := false
			for k := range known {
				partly = partly || strings.HasPrefix(k, path+".")
			}
			var sub map[string]json.RawMessage
			if partly && json.Unmarshal(raw, &sub) == nil {
				walk(path+".", sub)
				continue
			}
			out = append(out, path)
		}
	}
	walk("", top)
	slices.Sort(out)
	return out
}

// fileField maps one KubeletConfiguration field onto the Config field of
// its flag.
type fileField struct {
	// name is the field's path in the file.
	name string
	// flag is the flag of the same setting, which wins over the file.
	flag string
	// set checks the file's value and stores it in c, when the file gives
	// one; it leaves c as it is otherwise.
	set func(c *Config, kc *KubeletConfiguration) error
	// take copies the setting from src to dst.
	take func(dst, src *Config)
	// merge, when not nil, is used instead of take whether the flag was
	// given or not: it merges src's setting into dst's, dst winning.
	merge func(dst, src *Config)
}

// field makes a fileField: get reads the file's value and whether the file
// gives one, check (if not nil) tests it, and ptr locates the Config field.
func field[T any](name, flag string, ptr func(*Config) *T, get func(*KubeletConfiguration) (T, bool), check func(T) error) fileField {
	return fileField{
		name: name,
		flag: flag,
		set: func(c *Config, kc *KubeletConfiguration) error {
			v, ok := get(kc)
			if !ok {
				return nil
			}
			if check != nil {
				if err := check(v); err != nil {
					return err
				}
			}
			*ptr(c) = v
			return nil
		},
		take: func(dst, src *Config) { *ptr(dst) = *ptr(src) },
	}
}

// Readers of the file's values. A zero string or duration and a nil
// pointer are "not given": the kubelet defaults them the same way.

type kcConfig = KubeletConfiguration

func str(f func(*kcConfig) string) func(*kcConfig) (string, bool) {
	return func(kc *kcConfig) (string, bool) { s := f(kc); return s, s != "" }
}

func duration(f func(*kcConfig) metav1.Duration) func(*kcConfig) (time.Duration, bool) {
	return func(kc *kcConfig) (time.Duration, bool) { d := f(kc).Duration; return d, d != 0 }
}

func int32Ptr(f func(*kcConfig) *int32) func(*kcConfig) (int, bool) {
	return func(kc *kcConfig) (int, bool) {
		p := f(kc)
		if p == nil {
			return 0, false
		}
		return int(*p), true
	}
}

func boolPtr(f func(*kcConfig) *bool) func(*kcConfig) (bool, bool) {
	return func(kc *kcConfig) (bool, bool) {
		p := f(kc)
		if p == nil {
			return false, false
		}
		return *p, true
	}
}

// fileFields are the KubeletConfiguration fields minikubelet implements,
// each with the flag of the same setting. Every other field of the file is
// ignored with a warning.
func fileFields() []fileField {
	return append([]fileField{
		field("staticPodPath", "pod-manifest-path", func(c *Config) *string { return &c.PodManifestPath },
			str(func(kc *kcConfig) string { return kc.StaticPodPath }), checkAbsolutePath),
		field("podLogsDir", "pod-logs-dir", func(c *Config) *string { return &c.PodLogsDir },
			str(func(kc *kcConfig) string { return kc.PodLogsDir }), checkAbsolutePath),
		field("syncFrequency", "sync-frequency", func(c *Config) *time.Duration { return &c.SyncFrequency },
			duration(func(kc *kcConfig) metav1.Duration { return kc.SyncFrequency }), checkPositive),
		field("fileCheckFrequency", "file-check-frequency", func(c *Config) *time.Duration { return &c.FileCheckFrequency },
			duration(func(kc *kcConfig) metav1.Duration { return kc.FileCheckFrequency }), checkPositive),
		field("httpCheckFrequency", "http-check-frequency", func(c *Config) *time.Duration { return &c.HTTPCheckFrequency },
			duration(func(kc *kcConfig) metav1.Duration { return kc.HTTPCheckFrequency }), checkPositive),
		field("staticPodURL", "manifest-url", func(c *Config) *string { return &c.ManifestURL },
			str(func(kc *kcConfig) string { return kc.StaticPodURL }), checkManifestURL),
		field("staticPodURLHeader", "manifest-url-header", func(c *Config) *http.Header { return &c.ManifestURLHeader },
			staticPodURLHeader, checkHeader),
		field("address", "address", func(c *Config) *string { return &c.Address },
			str(func(kc *kcConfig) string { return kc.Address }), checkIP),
		field("tlsCertFile", "tls-cert-file", func(c *Config) *string { return &c.TLSCertFile },
			str(func(kc *kcConfig) string { return kc.TLSCertFile }), nil),
		field("tlsPrivateKeyFile", "tls-private-key-file", func(c *Config) *string { return &c.TLSPrivateKeyFile },
			str(func(kc *kcConfig) string { return kc.TLSPrivateKeyFile }), nil),
		field("serverTLSBootstrap", "rotate-server-certificates", func(c *Config) *bool { return &c.RotateServerCertificates },
			func(kc *kcConfig) (bool, bool) { return kc.ServerTLSBootstrap, kc.ServerTLSBootstrap }, nil),
		field("rotateCertificates", "rotate-certificates", func(c *Config) *bool { return &c.RotateCertificates },
			func(kc *kcConfig) (bool, bool) { return kc.RotateCertificates, kc.RotateCertificates }, nil),
		field("port", "port", func(c *Config) *int { return &c.Port },
			func(kc *kcConfig) (int, bool) { return int(kc.Port), kc.Port != 0 }, checkPort),
		field("enableDebuggingHandlers", "enable-debugging-handlers", func(c *Config) *bool { return &c.EnableDebuggingHandlers },
			boolPtr(func(kc *kcConfig) *bool { return kc.EnableDebuggingHandlers }), nil),
		field("authentication.x509.clientCAFile", "client-ca-file", func(c *Config) *string { return &c.ClientCAFile },
			str(func(kc *kcConfig) string { return kc.Authentication.X509.ClientCAFile }), nil),
		field("authentication.anonymous.enabled", "anonymous-auth", func(c *Config) *bool { return &c.AnonymousAuth },
			boolPtr(func(kc *kcConfig) *bool { return kc.Authentication.Anonymous.Enabled }), nil),
		field("authentication.webhook.enabled", "authentication-token-webhook", func(c *Config) *bool { return &c.AuthenticationTokenWebhook },
			boolPtr(func(kc *kcConfig) *bool { return kc.Authentication.Webhook.Enabled }), nil),
		field("authentication.webhook.cacheTTL", "authentication-token-webhook-cache-ttl", func(c *Config) *time.Duration { return &c.AuthenticationTokenWebhookCacheTTL },
			duration(func(kc *kcConfig) metav1.Duration { return kc.Authentication.Webhook.CacheTTL }), checkNotNegative),
		field("authorization.mode", "authorization-mode", func(c *Config) *string { return &c.AuthorizationMode },
			str(func(kc *kcConfig) string { return kc.Authorization.Mode }), checkAuthorizationMode),
		field("authorization.webhook.cacheAuthorizedTTL", "authorization-webhook-cache-authorized-ttl", func(c *Config) *time.Duration { return &c.AuthorizationWebhookCacheAuthorizedTTL },
			duration(func(kc *kcConfig) metav1.Duration { return kc.Authorization.Webhook.CacheAuthorizedTTL }), checkNotNegative),
		field("authorization.webhook.cacheUnauthorizedTTL", "authorization-webhook-cache-unauthorized-ttl", func(c *Config) *time.Duration { return &c.AuthorizationWebhookCacheUnauthorizedTTL },
			duration(func(kc *kcConfig) metav1.Duration { return kc.Authorization.Webhook.CacheUnauthorizedTTL }), checkNotNegative),
		field("readOnlyPort", "read-only-port", func(c *Config) *int { return &c.ReadOnlyPort },
			func(kc *kcConfig) (int, bool) { return int(kc.ReadOnlyPort), true }, checkPort),
		field("healthzBindAddress", "healthz-bind-address", func(c *Config) *string { return &c.HealthzBindAddress },
			str(func(kc *kcConfig) string { return kc.HealthzBindAddress }), checkIP),
		field("healthzPort", "healthz-port", func(c *Config) *int { return &c.HealthzPort },
			int32Ptr(func(kc *kcConfig) *int32 { return kc.HealthzPort }), checkPort),
		field("containerRuntimeEndpoint", "container-runtime-endpoint", func(c *Config) *string { return &c.RuntimeEndpoint },
			str(func(kc *kcConfig) string { return kc.ContainerRuntimeEndpoint }), checkEndpoint),
		field("runtimeRequestTimeout", "runtime-request-timeout", func(c *Config) *time.Duration { return &c.RuntimeRequestTimeout },
			duration(func(kc *kcConfig) metav1.Duration { return kc.RuntimeRequestTimeout }), checkPositive),
		featureGatesField(),
		field("crashLoopBackOff.maxContainerRestartPeriod", "max-container-restart-period", func(c *Config) *time.Duration { return &c.MaxContainerRestartPeriod },
			func(kc *kcConfig) (time.Duration, bool) {
				p := kc.CrashLoopBackOff.MaxContainerRestartPeriod
				if p == nil {
					return 0, false
				}
				return p.Duration, true
			}, checkMaxRestartPeriod),
		field("maxPods", "max-pods", func(c *Config) *int { return &c.MaxPods },
			func(kc *kcConfig) (int, bool) { return int(kc.MaxPods), kc.MaxPods != 0 }, checkMaxPods),
		field("cgroupDriver", "cgroup-driver", func(c *Config) *string { return &c.CgroupDriver },
			str(func(kc *kcConfig) string { return kc.CgroupDriver }), checkCgroupDriver),
		field("cgroupsPerQOS", "cgroups-per-qos", func(c *Config) *bool { return &c.CgroupsPerQOS },
			func(kc *kcConfig) (bool, bool) {
				if kc.CgroupsPerQOS == nil {
					return false, false
				}
				return *kc.CgroupsPerQOS, true
			}, nil),
		field("cgroupRoot", "cgroup-root", func(c *Config) *string { return &c.CgroupRoot },
			str(func(kc *kcConfig) string { return kc.CgroupRoot }), checkCgroupRoot),
		field("shutdownGracePeriod", "shutdown-grace-period", func(c *Config) *time.Duration { return &c.ShutdownGracePeriod },
			duration(func(kc *kcConfig) metav1.Duration { return kc.ShutdownGracePeriod }), checkNotNegative),
		field("shutdownGracePeriodCriticalPods", "shutdown-grace-period-critical-pods", func(c *Config) *time.Duration { return &c.ShutdownGracePeriodCriticalPods },
			duration(func(kc *kcConfig) metav1.Duration { return kc.ShutdownGracePeriodCriticalPods }), checkNotNegative),
		field("containerLogMonitorInterval", "container-log-monitor-interval", func(c *Config) *time.Duration { return &c.ContainerLogMonitorInterval },
			func(kc *kcConfig) (time.Duration, bool) {
				if kc.ContainerLogMonitorInterval == nil {
					return 0, false
				}
				return kc.ContainerLogMonitorInterval.Duration, true
			}, checkPositive),
		field("containerLogMaxSize", "container-log-max-size", func(c *Config) *string { return &c.ContainerLogMaxSize },
			str(func(kc *kcConfig) string { return kc.ContainerLogMaxSize }), checkLogMaxSize),
		field("containerLogMaxFiles", "container-log-max-files", func(c *Config) *int { return &c.ContainerLogMaxFiles },
			int32Ptr(func(kc *kcConfig) *int32 { return kc.ContainerLogMaxFiles }), checkLogMaxFiles),
		field("imageGCHighThresholdPercent", "image-gc-high-threshold", func(c *Config) *int { return &c.ImageGCHighThresholdPercent },
			int32Ptr(func(kc *kcConfig) *int32 { return kc.ImageGCHighThresholdPercent }), checkPercent),
		field("imageGCLowThresholdPercent", "image-gc-low-threshold", func(c *Config) *int { return &c.ImageGCLowThresholdPercent },
			int32Ptr(func(kc *kcConfig) *int32 { return kc.ImageGCLowThresholdPercent }), checkPercent),
		field("clusterDNS", "cluster-dns", func(c *Config) *[]string { return &c.ClusterDNS },
			func(kc *kcConfig) ([]string, bool) { return kc.ClusterDNS, len(kc.ClusterDNS) > 0 }, checkIPList),
		field("clusterDomain", "cluster-domain", func(c *Config) *string { return &c.ClusterDomain },
			str(func(kc *kcConfig) string { return kc.ClusterDomain }), checkClusterDomain),
		// resolvConf: "" is a value (no DNS for Default pods), not a
		// missing field.
		field("resolvConf", "resolv-conf", func(c *Config) *string { return &c.ResolvConf },
			func(kc *kcConfig) (string, bool) {
				if kc.ResolverConfig == nil {
					return "", false
				}
				return *kc.ResolverConfig, true
			}, nil),
		field("allowedUnsafeSysctls", "allowed-unsafe-sysctls", func(c *Config) *[]string { return &c.AllowedUnsafeSysctls },
			func(kc *kcConfig) ([]string, bool) { return kc.AllowedUnsafeSysctls, len(kc.AllowedUnsafeSysctls) > 0 }, admission.CheckSysctlPatterns),
		field("imageMinimumGCAge", "minimum-image-ttl-duration", func(c *Config) *time.Duration { return &c.ImageMinimumGCAge },
			duration(func(kc *kcConfig) metav1.Duration { return kc.ImageMinimumGCAge }), checkNotNegative),
	}, slices.Concat(evictionFileFields(), allocatableFileFields(), nodeFileFields())...)
}

// staticPodURLHeader reads staticPodURLHeader into an http.Header. As with
// --manifest-url-header, keys are canonicalised.
func staticPodURLHeader(kc *kcConfig) (http.Header, bool) {
	if len(kc.StaticPodURLHeader) == 0 {
		return nil, false
	}
	h := http.Header{}
	for k, vs := range kc.StaticPodURLHeader {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return h, true
}

func checkHeader(h http.Header) error {
	for k := range h {
		if strings.TrimSpace(k) == "" {
			return errors.New("a header has an empty name; want Name: [value, ...]")
		}
	}
	return nil
}

// featureGatesField maps featureGates onto --feature-gates. The two merge,
// as in the kubelet: a gate the command line names wins over the file's.
func featureGatesField() fileField {
	return fileField{
		name: "featureGates",
		flag: "feature-gates",
		set: func(c *Config, kc *kcConfig) error {
			for name := range kc.FeatureGates {
				if strings.TrimSpace(name) == "" {
					return errors.New("a gate has an empty name; want Name: true|false")
				}
			}
			if len(kc.FeatureGates) > 0 {
				c.FeatureGates = kc.FeatureGates
			}
			return nil
		},
		merge: func(dst, src *Config) {
			for name, on := range src.FeatureGates {
				if _, given := dst.FeatureGates[name]; given {
					continue
				}
				if dst.FeatureGates == nil {
					dst.FeatureGates = map[string]bool{}
				}
				dst.FeatureGates[name] = on
			}
		},
	}
}
