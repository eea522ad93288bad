// Package certificate obtains the kubelet port's serving certificate from
// the apiserver and renews it, as the kubelet does with serverTLSBootstrap
// (--rotate-server-certificates).
//
// A Manager makes an ECDSA P-256 key and a CertificateSigningRequest for
// signer kubernetes.io/kubelet-serving: subject system:node:<node> in
// organization system:nodes, the node's IP addresses and DNS names
// (hostname) as subject alternative names, key usages digital signature
// and server auth. Someone (an administrator with `kubectl certificate
// approve`, or a controller) approves it and the signer issues the
// certificate; the Manager then keeps it, with its key, in
// <dir>/kubelet-server-current.pem (mode 0600), where a restarted agent
// finds it again. It asks for the next one at a random point between 70%
// and 90% of the certificate's lifetime, or at once when the certificate
// does not name the node's current addresses, and keeps serving the old
// one meanwhile. A denied or failed request, or one not issued within 15
// minutes, is retried with a new request after a back-off (2s doubling to
// 5m).
//
// Data enters as the node's name and addresses and the apiserver's answers
// (a watch of the one request), and leaves through Current, which the
// kubelet port's TLS handshakes call. Node mode only: it needs the
// node's credentials, which may create, get and watch their own CSRs.
package certificate
