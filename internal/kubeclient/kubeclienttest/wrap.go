// Package kubeclienttest adapts client-go's fake clientset to
// kubeclient.Interface for unit tests. Only tests import it: it links
// client-go's whole clientset, which the agent's binary leaves out.
package kubeclienttest

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/minikubelet/minikubelet/internal/kubeclient"
)

// Wrap returns cs as a kubeclient.Interface. A fake clientset
// (k8s.io/client-go/kubernetes/fake) records the calls as usual.
func Wrap(cs kubernetes.Interface) *Clients { return &Clients{cs: cs} }

// Clients is a kubernetes.Interface seen as a kubeclient.Interface.
type Clients struct{ cs kubernetes.Interface }

var _ kubeclient.Interface = (*Clients)(nil)

// IsWatchListSemanticsUnSupported tells client-go's reflector, as the fake
// clientset does, that the fake cannot stream a list in a watch.
func (c *Clients) IsWatchListSemanticsUnSupported() bool {
	w, ok := c.cs.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && w.IsWatchListSemanticsUnSupported()
}

func (c *Clients) Pods(ns string) kubeclient.Client[*v1.Pod, *v1.PodList] {
	return c.cs.CoreV1().Pods(ns)
}

func (c *Clients) Nodes() kubeclient.Client[*v1.Node, *v1.NodeList] { return c.cs.CoreV1().Nodes() }

func (c *Clients) ConfigMaps(ns string) kubeclient.Client[*v1.ConfigMap, *v1.ConfigMapList] {
	return c.cs.CoreV1().ConfigMaps(ns)
}

func (c *Clients) Secrets(ns string) kubeclient.Client[*v1.Secret, *v1.SecretList] {
	return c.cs.CoreV1().Secrets(ns)
}

func (c *Clients) Services(ns string) kubeclient.Client[*v1.Service, *v1.ServiceList] {
	return c.cs.CoreV1().Services(ns)
}

func (c *Clients) Events(ns string) kubeclient.Client[*v1.Event, *v1.EventList] {
	return c.cs.CoreV1().Events(ns)
}

func (c *Clients) ServiceAccounts(ns string) kubeclient.TokenCreator {
	return c.cs.CoreV1().ServiceAccounts(ns)
}

func (c *Clients) Leases(ns string) kubeclient.Client[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return c.cs.CoordinationV1().Leases(ns)
}

func (c *Clients) CertificateSigningRequests() kubeclient.Client[*certificatesv1.CertificateSigningRequest, *certificatesv1.CertificateSigningRequestList] {
	return c.cs.CertificatesV1().CertificateSigningRequests()
}

func (c *Clients) TokenReviews() kubeclient.Creator[*authenticationv1.TokenReview] {
	return c.cs.AuthenticationV1().TokenReviews()
}

func (c *Clients) SubjectAccessReviews() kubeclient.Creator[*authorizationv1.SubjectAccessReview] {
	return c.cs.AuthorizationV1().SubjectAccessReviews()
}

func (c *Clients) RuntimeClasses() kubeclient.Client[*nodev1.RuntimeClass, *nodev1.RuntimeClassList] {
	return c.cs.NodeV1().RuntimeClasses()
}

func (c *Clients) Scheme() *runtime.Scheme { return scheme.Scheme }
