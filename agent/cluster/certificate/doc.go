// Package certificate obtains the node's certificates from the apiserver
// and renews them, as the kubelet does: the kubelet port's serving
// certificate (serverTLSBootstrap, --rotate-server-certificates; Kind
// Serving) and the node's client certificate towards the apiserver
// (--bootstrap-kubeconfig, --rotate-certificates; Kind Client). One
// Manager keeps one of them.
//
// A Manager makes an ECDSA P-256 key and a CertificateSigningRequest:
// subject system:node:<node> in organization system:nodes; for Serving,
// signer kubernetes.io/kubelet-serving, the node's IP addresses and DNS
// names (hostname) as subject alternative names, usages digital
// signature and server auth; for Client, signer
// kubernetes.io/kube-apiserver-client-kubelet, no alternative names,
// usages digital signature and client auth. Someone (the
// controller-manager's approver for a node's client certificates, an
// administrator with `kubectl certificate approve`) approves it and the
// signer issues the certificate; the Manager then keeps it, with its key,
// as the kubelet's store does: in <dir>/<prefix>-<time>.pem (mode 0600),
// with <dir>/<prefix>-current.pem (kubelet-server-current.pem,
// kubelet-client-current.pem) a link to the newest, where a restarted
// agent finds it again. A client certificate named by --kubeconfig is
// used while the directory keeps none.
//
// With Rotate (always for Serving) it asks for the next one at a random
// point between 70% and 90% of the certificate's lifetime; without, when
// it expires; and at once when there is none or it does not fit the node
// (another subject, or a serving certificate that does not name the
// node's current addresses), using the old one meanwhile. A request goes
// out with the node's own credentials (the client Run is given), or,
// while the Manager holds no valid certificate and has bootstrap
// credentials (the bootstrap kubeconfig's token), with those. A denied or
// failed request, or one not issued within 15 minutes, is retried with a
// new request after a back-off (2s doubling to 5m).
//
// Data enters as the node's name and addresses and the apiserver's answers
// (a watch of the one request), and leaves through Current, which the
// kubelet port's TLS handshakes call, and through RESTConfig: the node's
// client config, whose handshakes present the client certificate, whose
// requests wait for the first one, and whose connections are closed when
// a new one is issued, so that watches come back with it. Node mode only.
package certificate
