package config

import (
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// NodeConfig is node mode's part of Config: the kubelet's flags of the
// same names. Node mode is on when Kubeconfig is set.
type NodeConfig struct {
	// Kubeconfig is the kubeconfig file of the apiserver; empty runs the
	// agent standalone.
	Kubeconfig string
	// BootstrapKubeconfig, when set, is a kubeconfig (a bootstrap token,
	// typically) that requests the node's client certificate when
	// Kubeconfig holds no valid one; Kubeconfig is then written to use
	// the certificate, kept in --cert-dir. A flag only, as the kubelet's.
	BootstrapKubeconfig string
	// RotateCertificates requests a new client certificate before the
	// current one expires (rotateCertificates).
	RotateCertificates bool
	// MaxPods is the node's pods capacity and allocatable.
	MaxPods int
	// NodeLabels are given to the Node.
	NodeLabels map[string]string
	// RegisterWithTaints are the Node's taints at registration.
	RegisterWithTaints []v1.Taint
	// NodeStatusUpdateFrequency is how often the node's status is
	// computed (and patched when it changed); NodeStatusReportFrequency
	// how often it is patched when nothing changed.
	NodeStatusUpdateFrequency time.Duration
	NodeStatusReportFrequency time.Duration
	// KubeAPIQPS and KubeAPIBurst rate-limit every request to the
	// apiserver.
	KubeAPIQPS   float64
	KubeAPIBurst int
}

// defaultNodeConfig returns the kubelet's defaults.
func defaultNodeConfig() NodeConfig {
	return NodeConfig{
		MaxPods:                   110,
		NodeStatusUpdateFrequency: 10 * time.Second,
		NodeStatusReportFrequency: 5 * time.Minute,
		KubeAPIQPS:                50,
		KubeAPIBurst:              100,
	}
}

// addNodeFlags registers node mode's flags.
func (c *NodeConfig) addNodeFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "Kubeconfig file of the apiserver. When given, the agent runs in node mode: it registers its Node, renews its Lease, runs the pods bound to it (spec.nodeName) beside its static pods, writes their status, and keeps mirror pods of its static pods. Without it the agent runs standalone.")
	fs.StringVar(&c.BootstrapKubeconfig, "bootstrap-kubeconfig", c.BootstrapKubeconfig, "Kubeconfig whose credentials (a bootstrap token) request the node's client certificate when --kubeconfig is missing or holds no valid one: the agent sends a CertificateSigningRequest for signer kubernetes.io/kube-apiserver-client-kubelet (system:node:<node-name> in system:nodes), keeps the issued certificate and its key in --cert-dir (kubelet-client-current.pem, a link to a dated file), and writes --kubeconfig to use it. Not needed once --kubeconfig holds a valid certificate.")
	fs.BoolVar(&c.RotateCertificates, "rotate-certificates", c.RotateCertificates, "Request a new client certificate (kept in --cert-dir) at a random point between 70% and 90% of the current one's lifetime, with the node's credentials, and use it without restarting: open connections to the apiserver are closed and come back with it. Node mode only.")
	fs.IntVar(&c.MaxPods, "max-pods", c.MaxPods, "Pods capacity (and allocatable) of the Node, in node mode.")
	fs.Var((*labelsFlag)(&c.NodeLabels), "node-labels", "Labels of the Node, as key=value pairs separated by commas, in node mode; added to a Node that exists already.")
	fs.Var((*taintsFlag)(&c.RegisterWithTaints), "register-with-taints", "Taints the Node is registered with, as key=value:Effect pairs separated by commas (value may be empty: key:Effect), in node mode.")
	fs.DurationVar(&c.NodeStatusUpdateFrequency, "node-status-update-frequency", c.NodeStatusUpdateFrequency, "How often the Node's status is computed, and patched when it changed, in node mode.")
	fs.DurationVar(&c.NodeStatusReportFrequency, "node-status-report-frequency", c.NodeStatusReportFrequency, "How often the Node's status is patched even when nothing changed, in node mode (the Lease is renewed every 10s regardless).")
	fs.Float64Var(&c.KubeAPIQPS, "kube-api-qps", c.KubeAPIQPS, "Requests per second to the apiserver, in node mode.")
	fs.IntVar(&c.KubeAPIBurst, "kube-api-burst", c.KubeAPIBurst, "Burst of requests to the apiserver, in node mode.")
}

// validateNode reports node mode's bad values.
func (c *NodeConfig) validateNode() []error {
	var errs []error
	if c.MaxPods <= 0 {
		errs = append(errs, fmt.Errorf("--max-pods: must be positive, got %d", c.MaxPods))
	}
	if c.NodeStatusUpdateFrequency <= 0 || c.NodeStatusReportFrequency <= 0 {
		errs = append(errs, fmt.Errorf("--node-status-update-frequency and --node-status-report-frequency: must be positive, got %v and %v", c.NodeStatusUpdateFrequency, c.NodeStatusReportFrequency))
	}
	if c.BootstrapKubeconfig != "" && c.Kubeconfig == "" {
		errs = append(errs, errors.New("--bootstrap-kubeconfig: needs --kubeconfig, where the kubeconfig of the requested certificate is written"))
	}
	// --rotate-certificates without --kubeconfig is allowed and does
	// nothing, as with the kubelet: kubeadm's KubeletConfiguration sets
	// rotateCertificates, and a standalone node may be given that file
	// (agent.Run says the field has no effect).
	if c.KubeAPIQPS <= 0 || c.KubeAPIBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst: must be positive, got %v and %d", c.KubeAPIQPS, c.KubeAPIBurst))
	}
	return errs
}

// labelsFlag is --node-labels: key=value pairs separated by commas.
type labelsFlag map[string]string

func (l *labelsFlag) String() string {
	if l == nil || *l == nil {
		return ""
	}
	pairs := make([]string, 0, len(*l))
	for k, v := range *l {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

func (l *labelsFlag) Set(s string) error {
	if *l == nil {
		*l = labelsFlag{}
	}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok {
			return fmt.Errorf("%q is not key=value", pair)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("label %s value %q: %s", k, v, strings.Join(errs, "; "))
		}
		(*l)[k] = v
	}
	return nil
}

// taintsFlag is --register-with-taints: key[=value]:Effect, separated by
// commas.
type taintsFlag []v1.Taint

func (t *taintsFlag) String() string {
	if t == nil {
		return ""
	}
	out := make([]string, 0, len(*t))
	for _, x := range *t {
		out = append(out, x.ToString())
	}
	return strings.Join(out, ",")
}

func (t *taintsFlag) Set(s string) error {
	for _, spec := range strings.Split(s, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok {
			return fmt.Errorf("taint %q: want key=value:Effect", spec)
		}
		k, v, _ := strings.Cut(kv, "=")
		taint := v1.Taint{Key: k, Value: v, Effect: v1.TaintEffect(effect)}
		if err := checkTaint(taint); err != nil {
			return fmt.Errorf("taint %q: %w", spec, err)
		}
		*t = append(*t, taint)
	}
	return nil
}

// checkTaint checks a taint to register the Node with: a known effect, a
// qualified key and a label value.
func checkTaint(t v1.Taint) error {
	switch t.Effect {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		return fmt.Errorf("effect %q is not NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
	}
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return fmt.Errorf("key: %s", strings.Join(errs, "; "))
	}
	if t.Value != "" {
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			return fmt.Errorf("value: %s", strings.Join(errs, "; "))
		}
	}
	if t.TimeAdded != nil {
		return errors.New("timeAdded: set by the node, not given")
	}
	return nil
}

// checkTaints is checkTaint of each, naming the one at fault.
func checkTaints(ts []v1.Taint) error {
	for i, t := range ts {
		if err := checkTaint(t); err != nil {
			return fmt.Errorf("[%d] %s: %w", i, t.ToString(), err)
		}
	}
	return nil
}

// nodeFileFields are the config file's fields of node mode that the
// kubelet's file has (kubeconfig, bootstrap and labels are flags only).
func nodeFileFields() []fileField {
	return []fileField{
		field("registerWithTaints", "register-with-taints", func(c *Config) *[]v1.Taint { return &c.RegisterWithTaints },
			func(kc *kcConfig) ([]v1.Taint, bool) { return kc.RegisterWithTaints, len(kc.RegisterWithTaints) > 0 }, checkTaints),
		field("nodeStatusUpdateFrequency", "node-status-update-frequency", func(c *Config) *time.Duration { return &c.NodeStatusUpdateFrequency },
			duration(func(kc *kcConfig) metav1.Duration { return kc.NodeStatusUpdateFrequency }), checkPositive),
		// As the kubelet defaults a config file: a file that sets only the
		// update frequency reports as often as it updates.
		field("nodeStatusReportFrequency", "node-status-report-frequency", func(c *Config) *time.Duration { return &c.NodeStatusReportFrequency },
			duration(func(kc *kcConfig) metav1.Duration {
				if kc.NodeStatusReportFrequency.Duration == 0 && kc.NodeStatusUpdateFrequency.Duration > 0 {
					return kc.NodeStatusUpdateFrequency
				}
				return kc.NodeStatusReportFrequency
			}), checkPositive),
		field("kubeAPIQPS", "kube-api-qps", func(c *Config) *float64 { return &c.KubeAPIQPS },
			func(kc *kcConfig) (float64, bool) {
				if kc.KubeAPIQPS == nil {
					return 0, false
				}
				return float64(*kc.KubeAPIQPS), true
			}, func(q float64) error { return checkPositiveInt(int(q)) }),
		field("kubeAPIBurst", "kube-api-burst", func(c *Config) *int { return &c.KubeAPIBurst },
			func(kc *kcConfig) (int, bool) { return int(kc.KubeAPIBurst), kc.KubeAPIBurst != 0 }, checkPositiveInt),
	}
}
