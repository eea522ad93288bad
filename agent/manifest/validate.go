package manifest

import (
	"math"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate returns the problems that keep a node from running pod, each
// naming its field the way the API server does, for example
// `spec.containers[1].name: Duplicate value: "app"`. An empty list means the
// pod can run. Validate checks the pod as written, before
// ApplyStaticIdentity; it does not modify the pod, and it accepts fields that
// Default would fill in (an empty restartPolicy, dnsPolicy or port protocol,
// zero probe timings, a hostPort of 0 on the host network).
//
// It is a subset of the API server's validation: the fields a node acts on,
// for pods of every source. Each area has its own small function; a new rule
// goes into the function of its area, or into a new one called from here.
// The references a static pod may not make are ValidateStatic's.
func Validate(pod *v1.Pod) field.ErrorList {
	return validatePod(pod, nil)
}

// validatePod validates pod with every path below root: nil for a pod on
// its own, items[i] for an item of a PodList.
func validatePod(pod *v1.Pod, root *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateObjectMeta(&pod.ObjectMeta, under(root, "metadata"))...)
	errs = append(errs, validatePodSpec(&pod.Spec, under(root, "spec"))...)
	errs = append(errs, validateNoNUL(pod, root)...)
	return errs
}

// under returns the path of the field name below root, or of the top-level
// field name when root is nil.
func under(root *field.Path, name string) *field.Path {
	if root == nil {
		return field.NewPath(name)
	}
	return root.Child(name)
}

func validateObjectMeta(meta *metav1.ObjectMeta, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if meta.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "name is required"))
	} else {
		for _, msg := range isDNS1123Subdomain(meta.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), meta.Name, msg))
		}
	}
	if meta.Namespace != "" {
		for _, msg := range isDNS1123Label(meta.Namespace) {
			errs = append(errs, field.Invalid(path.Child("namespace"), meta.Namespace, msg))
		}
	}
	errs = append(errs, validateLabels(meta.Labels, path.Child("labels"))...)
	errs = append(errs, validateAnnotations(meta.Annotations, path.Child("annotations"))...)
	return errs
}

// validateLabels checks label keys (qualified names: an optional DNS
// subdomain prefix of at most 253 characters and a name of at most 63) and
// values (at most 63 characters), as the API server does, in key order.
func validateLabels(labels map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(labels) {
		for _, msg := range isQualifiedName(k) {
			errs = append(errs, field.Invalid(path, k, msg))
		}
		for _, msg := range isLabelValue(labels[k]) {
			errs = append(errs, field.Invalid(path, labels[k], msg))
		}
	}
	return errs
}

// validateAnnotations checks annotation keys (qualified names, in any case)
// and that keys and values take at most 256 KiB in all, as the API server
// does, in key order.
func validateAnnotations(annotations map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(annotations) {
		for _, msg := range isQualifiedName(k, strings.ToLower) {
			errs = append(errs, field.Invalid(path, k, msg))
		}
	}
	if apivalidation.ValidateAnnotationsSize(annotations) != nil {
		errs = append(errs, field.TooLong(path, "", apivalidation.TotalAnnotationSizeLimitB))
	}
	return errs
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func validatePodSpec(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	volumes, volErrs := validateVolumes(spec.Volumes, path.Child("volumes"))
	errs = append(errs, volErrs...)
	errs = append(errs, validateContainers(spec, volumes, path)...)
	errs = append(errs, validateHostNetworkPorts(spec, path)...)
	errs = append(errs, validateRestartPolicy(spec.RestartPolicy, path.Child("restartPolicy"))...)
	errs = append(errs, validateGracePeriod(spec.TerminationGracePeriodSeconds, path.Child("terminationGracePeriodSeconds"))...)
	errs = append(errs, validateActiveDeadline(spec.ActiveDeadlineSeconds, path.Child("activeDeadlineSeconds"))...)
	errs = append(errs, validateDNS(spec, path)...)
	errs = append(errs, validateSecurity(spec, path)...)
	errs = append(errs, validateResourceList(spec.Overhead, path.Child("overhead"))...)
	if r := spec.Resources; r != nil {
		errs = append(errs, validateResourceList(r.Limits, path.Child("resources", "limits"))...)
		errs = append(errs, validateResourceList(r.Requests, path.Child("resources", "requests"))...)
	}
	return errs
}

func validateRestartPolicy(p v1.RestartPolicy, path *field.Path) field.ErrorList {
	supported := []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}
	if p == "" || slices.Contains(supported, p) {
		return nil
	}
	return field.ErrorList{field.NotSupported(path, p, supported)}
}

func validateGracePeriod(g *int64, path *field.Path) field.ErrorList {
	if g != nil && *g < 0 {
		return field.ErrorList{field.Invalid(path, *g, "must be greater than or equal to 0")}
	}
	return nil
}

func validateActiveDeadline(d *int64, path *field.Path) field.ErrorList {
	if d != nil && (*d < 1 || *d > math.MaxInt32) {
		return field.ErrorList{field.Invalid(path, *d, validation.InclusiveRangeError(1, math.MaxInt32))}
	}
	return nil
}

// API server limits on dnsConfig.
const (
	maxDNSNameservers = 3
	maxDNSSearchPaths = 32
)

// validateDNS checks dnsPolicy and dnsConfig: the policy None takes every
// setting from dnsConfig, so it needs at least one nameserver there.
func validateDNS(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	supported := []v1.DNSPolicy{v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone}
	if p := spec.DNSPolicy; p != "" && !slices.Contains(supported, p) {
		errs = append(errs, field.NotSupported(path.Child("dnsPolicy"), p, supported))
	}
	cfgPath := path.Child("dnsConfig")
	cfg := spec.DNSConfig
	if spec.DNSPolicy == v1.DNSNone {
		switch {
		case cfg == nil:
			errs = append(errs, field.Required(cfgPath, "must provide `dnsConfig` when `dnsPolicy` is None"))
		case len(cfg.Nameservers) == 0:
			errs = append(errs, field.Required(cfgPath.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None"))
		}
	}
	if cfg == nil {
		return errs
	}
	if len(cfg.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(cfgPath.Child("nameservers"), cfg.Nameservers, "must not have more than 3 nameservers"))
	}
	for i, ns := range cfg.Nameservers {
		if _, err := netip.ParseAddr(ns); err != nil {
			errs = append(errs, field.Invalid(cfgPath.Child("nameservers").Index(i), ns, "must be a valid IP address"))
		}
	}
	if len(cfg.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(cfgPath.Child("searches"), cfg.Searches, "must not have more than 32 search paths"))
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(cfgPath.Child("options").Index(i).Child("name"), "must not be empty"))
		}
	}
	return errs
}

// The name checks of k8s.io/apimachinery/pkg/util/validation, except that
// a value over the length limit gets only the length message: the regular
// expressions behind the others take seconds on a value of megabytes.
func isDNS1123Subdomain(s string) []string {
	return lengthFirst(s, validation.DNS1123SubdomainMaxLength, validation.IsDNS1123Subdomain)
}

func isDNS1123Label(s string) []string {
	return lengthFirst(s, validation.DNS1123LabelMaxLength, validation.IsDNS1123Label)
}

func isLabelValue(s string) []string {
	return lengthFirst(s, validation.LabelValueMaxLength, validation.IsValidLabelValue)
}

func isPortName(s string) []string { return lengthFirst(s, 15, validation.IsValidPortName) }

func isConfigMapKey(s string) []string {
	return lengthFirst(s, validation.DNS1123SubdomainMaxLength, validation.IsConfigMapKey)
}

// isQualifiedName checks a label or annotation key: an optional DNS
// subdomain prefix and '/', and a name of at most 63 characters; fold, if
// any, is applied to the key first (annotation keys are checked in lower
// case).
func isQualifiedName(s string, fold ...func(string) string) []string {
	const maxLen = validation.DNS1123SubdomainMaxLength + 1 + validation.LabelValueMaxLength
	if len(s) > maxLen {
		return []string{validation.MaxLenError(maxLen) + " (a prefix of at most 253, '/' and a name of at most 63)"}
	}
	for _, f := range fold {
		s = f(s)
	}
	return validation.IsQualifiedName(s)
}

func lengthFirst(s string, maxLen int, check func(string) []string) []string {
	if len(s) > maxLen {
		return []string{validation.MaxLenError(maxLen)}
	}
	return check(s)
}
