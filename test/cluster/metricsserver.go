package cluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// metrics-server runs as a host process, as CoreDNS does, behind the
// APIService v1beta1.metrics.k8s.io: a Service without selector whose
// EndpointSlice names the host IP, which the apiserver routes to
// (--enable-aggregator-routing). Its objects are those of its release
// manifests, bound to a user of the cluster CA instead of a service
// account.
const (
	metricsServerName = "metrics-server"
	// metricsServerUser is metrics-server's client certificate's user,
	// towards the apiserver and the node's kubelet port.
	metricsServerUser = "system:metrics-server"
	// frontProxyUser is the CN of the apiserver's client certificate
	// towards aggregated APIs (--requestheader-allowed-names).
	frontProxyUser = "front-proxy-client"
	// MetricsResolution is how often metrics-server scrapes the node (its
	// smallest allowed value): kubectl top has figures one or two
	// resolutions after a pod starts.
	MetricsResolution = 10 * time.Second
	// metricsAPIPath is the aggregated API's discovery document.
	metricsAPIPath = "/apis/metrics.k8s.io/v1beta1"
)

// apiServices is the aggregator's resource.
var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// createMetricsServerObjects creates metrics-server's RBAC (its release's
// ClusterRoles and bindings: nodes/metrics, pods and nodes; auth-delegator;
// the extension-apiserver-authentication reader in kube-system), its
// Service and EndpointSlice, and the APIService, whose caBundle is the
// cluster CA that signed metrics-server's serving certificate.
func (c *Cluster) createMetricsServerObjects(ctx context.Context, client kubernetes.Interface) error {
	rbac := client.RbacV1()
	roles := []*rbacv1.ClusterRole{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:metrics-server"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}},
				{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}},
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregated-metrics-reader", Labels: map[string]string{
				"rbac.authorization.k8s.io/aggregate-to-view":  "true",
				"rbac.authorization.k8s.io/aggregate-to-edit":  "true",
				"rbac.authorization.k8s.io/aggregate-to-admin": "true",
			}},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}},
			},
		},
	}
	for _, r := range roles {
		if _, err := rbac.ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return fmt.Errorf("create ClusterRole %s: %w", r.Name, err)
		}
	}
	user := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: metricsServerUser}}
	for name, role := range map[string]string{
		"system:metrics-server":                "system:metrics-server",
		"metrics-server:system:auth-delegator": "system:auth-delegator",
	} {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   user,
		}
		if _, err := rbac.ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return fmt.Errorf("create ClusterRoleBinding %s: %w", name, err)
		}
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-server-auth-reader", Namespace: metav1.NamespaceSystem},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
		Subjects:   user,
	}
	if _, err := rbac.RoleBindings(metav1.NamespaceSystem).Create(ctx, rb, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("create RoleBinding kube-system/%s: %w", rb.Name, err)
	}
	if err := c.createMetricsServerService(ctx, client); err != nil {
		return err
	}
	rc, err := c.RESTConfig()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": "v1beta1.metrics.k8s.io", "labels": map[string]any{"k8s-app": metricsServerName}},
		"spec": map[string]any{
			"group": "metrics.k8s.io", "version": "v1beta1",
			"service":              map[string]any{"namespace": metav1.NamespaceSystem, "name": metricsServerName, "port": int64(443)},
			"caBundle":             base64.StdEncoding.EncodeToString(c.ca.CertPEM),
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
		},
	}}
	if _, err := dyn.Resource(apiServices).Create(ctx, svc, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("create APIService v1beta1.metrics.k8s.io: %w", err)
	}
	return nil
}

// createMetricsServerService makes kube-system/metrics-server a Service
// without selector whose one EndpointSlice names metrics-server on the
// host IP.
func (c *Cluster) createMetricsServerService(ctx context.Context, client kubernetes.Interface) error {
	port := int32(c.ports.metrics)
	labels := map[string]string{"k8s-app": metricsServerName}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: metricsServerName, Namespace: metav1.NamespaceSystem, Labels: labels},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{
			{Name: "https", Port: 443, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(port)},
		}},
	}
	if _, err := client.CoreV1().Services(metav1.NamespaceSystem).Create(ctx, svc, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("create Service kube-system/%s: %w", metricsServerName, err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: metricsServerName + "-host", Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{discoveryv1.LabelServiceName: metricsServerName, discoveryv1.LabelManagedBy: managedBy}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{c.hostIP.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
	if _, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).Create(ctx, slice, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("create EndpointSlice kube-system/%s: %w", slice.Name, err)
	}
	return nil
}

// startMetricsServer runs metrics-server on the host IP with the
// serving certificate the APIService trusts, its own kubeconfig for the
// apiserver, the delegated authentication and authorization, and the
// node's kubelet port (the port in the Node's status, its InternalIP,
// whose serving certificate the cluster CA signed). Its scrape timeout
// stays under the resolution, as metrics-server requires.
func (c *Cluster) startMetricsServer() error {
	f := &c.files
	var err error
	c.metrics, err = launch(metricsServerName, c.opts.Bins.MetricsServer, c.logPath(metricsServerName), nil,
		"--kubeconfig", f.metricsKubeconfig,
		"--authentication-kubeconfig", f.metricsKubeconfig,
		"--authorization-kubeconfig", f.metricsKubeconfig,
		"--bind-address", c.hostIP.String(),
		"--secure-port", strconv.Itoa(c.ports.metrics),
		"--tls-cert-file", f.metricsCert, "--tls-private-key-file", f.metricsKey,
		"--kubelet-certificate-authority", c.ca.CertFile,
		"--kubelet-preferred-address-types", "InternalIP",
		"--kubelet-use-node-status-port",
		"--metric-resolution", MetricsResolution.String(),
		"--kubelet-request-timeout", (MetricsResolution / 2).String(),
		"-v", "1",
	)
	return err
}

// waitMetricsAPI waits until the apiserver serves the metrics.k8s.io
// discovery document through metrics-server.
func (c *Cluster) waitMetricsAPI(ctx context.Context) error {
	client, err := c.Client()
	if err != nil {
		return err
	}
	rest := client.Discovery().RESTClient()
	return poll(ctx, "wait for the metrics.k8s.io API (metrics-server)", controlPlanePoll, func(ctx context.Context) error {
		_, err := rest.Get().AbsPath(metricsAPIPath).DoRaw(ctx)
		return err
	}, c.metrics, c.api)
}
