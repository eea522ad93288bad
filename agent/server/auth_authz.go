package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/klog/v2"
)

// attributes are what a request to the kubelet port asks to do, as the
// kubelet puts it to its authorizer: a verb on the subresource of the
// node (resource nodes, API version v1, name the node's).
type attributes struct {
	User        *User
	Verb        string
	Subresource string
	Name        string
	Path        string
}

// requestAttributes maps a request onto the attributes the kubelet v1.36
// authorizes (pkg/kubelet/server/auth.go; fine-grained kubelet
// authorization is GA and always on there). Each of the returned
// attributes is tried in order; the request is allowed if one is:
//
//	/pods, /runningpods/  pods, then proxy
//	/healthz              healthz, then proxy
//	/configz              configz, then proxy
//	/stats/               stats
//	/metrics              metrics (with /metrics/cadvisor, /resource, /probes)
//	/logs/                log
//	/checkpoint/          checkpoint
//	/statusz              statusz
//	/flagz                configz
//	anything else         proxy (/containerLogs, /exec, /attach, /portForward, /run, /debug/pprof, ...)
//
// The verb comes from the method: POST create, GET get, PUT update, PATCH
// patch, DELETE delete, and, as in the kubelet, none for the others (HEAD
// included).
func requestAttributes(u *User, node string, r *http.Request) []attributes {
	var verb string
	switch r.Method {
	case http.MethodPost:
		verb = "create"
	case http.MethodGet:
		verb = "get"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	path := r.URL.Path
	var subresources []string
	switch {
	case isSubpath(path, "/pods"), isSubpath(path, "/runningpods/"):
		subresources = append(subresources, "pods")
	case isSubpath(path, "/healthz"):
		subresources = append(subresources, "healthz")
	case isSubpath(path, "/configz"):
		subresources = append(subresources, "configz")
	}
	switch {
	case isSubpath(path, "/stats/"):
		subresources = append(subresources, "stats")
	case isSubpath(path, "/metrics"):
		subresources = append(subresources, "metrics")
	case isSubpath(path, "/logs/"):
		subresources = append(subresources, "log")
	case isSubpath(path, "/checkpoint/"):
		subresources = append(subresources, "checkpoint")
	case isSubpath(path, "/statusz"):
		subresources = append(subresources, "statusz")
	case isSubpath(path, "/flagz"):
		subresources = append(subresources, "configz")
	default:
		subresources = append(subresources, "proxy")
	}
	out := make([]attributes, 0, len(subresources))
	for _, sub := range subresources {
		out = append(out, attributes{User: u, Verb: verb, Subresource: sub, Name: node, Path: path})
	}
	return out
}

// isSubpath reports whether p is path or below it ("/stats/summary" is
// below "/stats/" and "/stats"; "/podsx" is not below "/pods").
func isSubpath(p, path string) bool {
	path = strings.TrimSuffix(path, "/")
	return p == path || (strings.HasPrefix(p, path) && p[len(path)] == '/')
}

// authorizer decides whether attributes are allowed; an error means it
// could not tell (the request gets 500, as in the kubelet). Safe for
// concurrent use.
type authorizer interface {
	authorize(ctx context.Context, a attributes) (bool, error)
}

// alwaysAllow is authorization.mode AlwaysAllow: every authenticated
// request is allowed.
type alwaysAllow struct{}

func (alwaysAllow) authorize(context.Context, attributes) (bool, error) { return true, nil }

// auth guards the kubelet port.
type auth struct {
	authn    *authenticator
	authz    authorizer
	nodeName string
}

// filter serves a request with next when it is authenticated (401
// otherwise) and one of its attributes is authorized (403 otherwise; 500
// when the authorizer cannot tell), with the kubelet's messages.
func (a *auth) filter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger := klog.FromContext(r.Context())
		u, err := a.authn.authenticate(r)
		if err != nil {
			logger.V(4).Info("Unauthorized request to the kubelet port", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := requestAttributes(u, a.nodeName, r)
		var subresources []string
		for _, attr := range attrs {
			subresources = append(subresources, attr.Subresource)
			allowed, err := a.authz.authorize(r.Context(), attr)
			if err != nil {
				logger.Error(err, "Authorization error", "user", u.Name, "verb", attr.Verb, "resource", "nodes", "subresource", attr.Subresource)
				http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=nodes, subresource=%s)", u.Name, attr.Verb, attr.Subresource), http.StatusInternalServerError)
				return
			}
			if allowed {
				next.ServeHTTP(w, r)
				return
			}
		}
		logger.V(2).Info("Forbidden", "user", u.Name, "verb", attrs[0].Verb, "resource", "nodes", "subresources", subresources)
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=%v)", u.Name, attrs[0].Verb, subresources), http.StatusForbidden)
	})
}
