package manifest

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// forbiddenInInit is why an init container that runs to completion may have
// neither probes nor lifecycle hooks.
const forbiddenInInit = "may not be set for init containers without restartPolicy=Always"

// validateProbes checks a container's liveness, readiness and startup
// probes: one well-formed handler, timings that are not negative (zero is
// left for Default), and a success threshold of 1 for liveness and startup,
// which act on the first success.
func validateProbes(c *v1.Container, scope containerScope, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, pr := range []struct {
		name       string
		probe      *v1.Probe
		oneSuccess bool // successThreshold must be 1
	}{
		{"livenessProbe", c.LivenessProbe, true},
		{"readinessProbe", c.ReadinessProbe, false},
		{"startupProbe", c.StartupProbe, true},
	} {
		if pr.probe == nil {
			continue
		}
		p := path.Child(pr.name)
		if scope.init && !scope.sidecar {
			errs = append(errs, field.Forbidden(p, forbiddenInInit))
			continue
		}
		errs = append(errs, validateProbe(pr.probe, c, p)...)
		if s := pr.probe.SuccessThreshold; pr.oneSuccess && s != 0 && s != 1 {
			errs = append(errs, field.Invalid(p.Child("successThreshold"), s, "must be 1"))
		}
		if g := pr.probe.TerminationGracePeriodSeconds; g != nil && pr.name == "readinessProbe" {
			errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must not be set for readinessProbes"))
		}
	}
	return errs
}

func validateProbe(probe *v1.Probe, c *v1.Container, path *field.Path) field.ErrorList {
	h := probe.ProbeHandler
	errs := validateHandler(handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, grpc: h.GRPC}, c, 0, path)
	for _, t := range []struct {
		name  string
		value int32
	}{
		{"initialDelaySeconds", probe.InitialDelaySeconds},
		{"timeoutSeconds", probe.TimeoutSeconds},
		{"periodSeconds", probe.PeriodSeconds},
		{"successThreshold", probe.SuccessThreshold},
		{"failureThreshold", probe.FailureThreshold},
	} {
		if t.value < 0 {
			errs = append(errs, field.Invalid(path.Child(t.name), t.value, "must be greater than or equal to 0"))
		}
	}
	if g := probe.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

// validateLifecycle checks the postStart and preStop hooks.
func validateLifecycle(c *v1.Container, scope containerScope, path *field.Path) field.ErrorList {
	l := c.Lifecycle
	if l == nil {
		return nil
	}
	if scope.init && !scope.sidecar {
		return field.ErrorList{field.Forbidden(path, forbiddenInInit)}
	}
	var errs field.ErrorList
	for _, hook := range []struct {
		name string
		h    *v1.LifecycleHandler
	}{
		{"postStart", l.PostStart},
		{"preStop", l.PreStop},
	} {
		if hook.h == nil {
			continue
		}
		h := handler{exec: hook.h.Exec, httpGet: hook.h.HTTPGet, tcpSocket: hook.h.TCPSocket, sleep: hook.h.Sleep}
		errs = append(errs, validateHandler(h, c, scope.gracePeriod, path.Child(hook.name))...)
	}
	return errs
}

// handler is a probe's or a hook's action: exactly one field is set.
type handler struct {
	exec      *v1.ExecAction
	httpGet   *v1.HTTPGetAction
	tcpSocket *v1.TCPSocketAction
	grpc      *v1.GRPCAction  // probes only
	sleep     *v1.SleepAction // hooks only
}

// validateHandler checks that h has exactly one action and that it is well
// formed. Ports are numbers or the names of c's ports. gracePeriod bounds a
// sleep action.
func validateHandler(h handler, c *v1.Container, gracePeriod int64, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	check := func(set bool, name string, validate func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(path.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, validate(path.Child(name))...)
	}
	check(h.exec != nil, "exec", func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	check(h.httpGet != nil, "httpGet", func(p *field.Path) field.ErrorList {
		return validateHTTPGet(h.httpGet, c, p)
	})
	check(h.tcpSocket != nil, "tcpSocket", func(p *field.Path) field.ErrorList {
		return validatePortRef(h.tcpSocket.Port, c, p.Child("port"))
	})
	check(h.grpc != nil, "grpc", func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		for _, msg := range validation.IsValidPortNum(int(h.grpc.Port)) {
			errs = append(errs, field.Invalid(p.Child("port"), h.grpc.Port, msg))
		}
		return errs
	})
	check(h.sleep != nil, "sleep", func(p *field.Path) field.ErrorList {
		s := h.sleep.Seconds
		if gracePeriod >= 0 && (s < 0 || s > gracePeriod) {
			return field.ErrorList{field.Invalid(p.Child("seconds"), s,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", gracePeriod))}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(path, "must specify a handler type"))
	}
	return errs
}

func validateHTTPGet(g *v1.HTTPGetAction, c *v1.Container, path *field.Path) field.ErrorList {
	errs := validatePortRef(g.Port, c, path.Child("port"))
	supported := []v1.URIScheme{v1.URISchemeHTTP, v1.URISchemeHTTPS}
	if g.Scheme != "" && !slices.Contains(supported, g.Scheme) {
		errs = append(errs, field.NotSupported(path.Child("scheme"), g.Scheme, supported))
	}
	for i, h := range g.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(h.Name) {
			errs = append(errs, field.Invalid(path.Child("httpHeaders").Index(i).Child("name"), h.Name, msg))
		}
	}
	return errs
}

// validatePortRef checks a port of a probe or hook: a number from 1 to
// 65535, or the name of one of c's ports, which the node resolves when it
// runs the action.
func validatePortRef(port intstr.IntOrString, c *v1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(int(port.IntVal)) {
			errs = append(errs, field.Invalid(path, port.IntVal, msg))
		}
	case intstr.String:
		msgs := isPortName(port.StrVal)
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(path, port.StrVal, msg))
		}
		if len(msgs) == 0 && !slices.ContainsFunc(c.Ports, func(p v1.ContainerPort) bool { return p.Name == port.StrVal }) {
			errs = append(errs, field.Invalid(path, port.StrVal, "must be the name of one of the container's ports"))
		}
	default:
		errs = append(errs, field.Invalid(path, port.String(), "must be a port number or name"))
	}
	return errs
}
