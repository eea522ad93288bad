package manifest

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Defaults the API server applies and a node relies on.
const (
	DefaultTerminationGracePeriodSeconds = 30
	DefaultSchedulerName                 = "default-scheduler"
	DefaultTerminationMessagePath        = "/dev/termination-log"
)

// Default fills in the fields the API server would default and a node relies
// on, leaving every field that is already set as it is. It is idempotent.
//
// Pod: restartPolicy Always, terminationGracePeriodSeconds 30, dnsPolicy
// ClusterFirst, schedulerName default-scheduler, enableServiceLinks true, an
// empty securityContext. Every init and regular container: imagePullPolicy
// (Always for the tag "latest" or no tag and no digest, else IfNotPresent),
// terminationMessagePath /dev/termination-log, terminationMessagePolicy
// File, port protocol TCP (and hostPort = containerPort on the host
// network), resource requests copied from limits where unset, probe timing
// (timeout 1s, period 10s, success 1, failure 3) and HTTP probe and hook
// path "/" and scheme HTTP. A volume of no type becomes an emptyDir; an
// image volume gets the pullPolicy a container with its reference would.
func Default(pod *v1.Pod) {
	spec := &pod.Spec
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := int64(DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &g
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = DefaultSchedulerName
	}
	if spec.EnableServiceLinks == nil {
		t := v1.DefaultEnableServiceLinks
		spec.EnableServiceLinks = &t
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	for i := range spec.Volumes {
		if v := &spec.Volumes[i].VolumeSource; countVolumeTypes(v) == 0 {
			v.EmptyDir = &v1.EmptyDirVolumeSource{}
		}
		if im := spec.Volumes[i].Image; im != nil && im.PullPolicy == "" {
			im.PullPolicy = defaultPullPolicy(im.Reference)
		}
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i], spec.HostNetwork)
	}
}

func defaultContainer(c *v1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = DefaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = v1.ProtocolTCP
		}
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	defaultRequests(&c.Resources)
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
	if l := c.Lifecycle; l != nil {
		if l.PostStart != nil {
			defaultHTTPGet(l.PostStart.HTTPGet)
		}
		if l.PreStop != nil {
			defaultHTTPGet(l.PreStop.HTTPGet)
		}
	}
}

// defaultPullPolicy is Always for an image with the tag "latest", or with
// neither tag nor digest, and IfNotPresent otherwise, as the API server
// decides it. A colon before the last slash separates a registry port
// (localhost:5000/app has no tag).
func defaultPullPolicy(image string) v1.PullPolicy {
	ref, _, hasDigest := strings.Cut(image, "@")
	tag := ""
	if colon := strings.LastIndex(ref, ":"); colon > strings.LastIndex(ref, "/") {
		tag = ref[colon+1:]
	}
	if tag == "latest" || (tag == "" && !hasDigest) {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// defaultRequests copies each limit whose request is unset into the
// requests, as the API server does; the QoS class and the cgroups depend on
// it.
func defaultRequests(r *v1.ResourceRequirements) {
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if r.Requests == nil {
			r.Requests = v1.ResourceList{}
		}
		r.Requests[name] = limit.DeepCopy()
	}
}

func defaultProbe(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
}

func defaultHTTPGet(h *v1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = v1.URISchemeHTTP
	}
}
