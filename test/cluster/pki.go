package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certLife is how long every certificate of a test cluster is valid.
const certLife = 7 * 24 * time.Hour

// CA is the cluster's certificate authority: it signs the apiserver's
// serving certificate, every client certificate (the components', the
// admin's, the node's) and, through the controller-manager's CSR signer,
// what nodes request later.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	// CertPEM is the CA certificate, PEM encoded.
	CertPEM []byte
	// CertFile and KeyFile are where WriteFiles put it.
	CertFile, KeyFile string
}

// certSpec describes one certificate the CA issues.
type certSpec struct {
	// cn and orgs are the subject: for a client certificate the user name
	// and groups the apiserver sees.
	cn   string
	orgs []string
	// server and client select the extended key usages.
	server, client bool
	// ips and dns are the subject alternative names of a serving
	// certificate.
	ips []net.IP
	dns []string
}

// newCA makes a CA whose subject is cn and writes <name>.crt and
// <name>.key into dir.
func newCA(dir, name, cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLife),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	ca := &CA{cert: cert, key: key, CertPEM: pemCert(der),
		CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	keyPEM, err := pemKey(key)
	if err != nil {
		return nil, err
	}
	if err := writeFile(ca.CertFile, ca.CertPEM); err != nil {
		return nil, err
	}
	if err := writeFile(ca.KeyFile, keyPEM); err != nil {
		return nil, err
	}
	return ca, nil
}

// issue makes a key and a certificate for spec signed by the CA and
// writes them to <dir>/<name>.crt and .key; it returns those paths.
func (ca *CA) issue(dir, name string, spec certSpec) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("key of %s: %w", name, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: spec.cn, Organization: spec.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLife),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		IPAddresses:  spec.ips,
		DNSNames:     spec.dns,
	}
	if spec.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if spec.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return "", "", fmt.Errorf("certificate of %s: %w", name, err)
	}
	keyPEM, err := pemKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := writeFile(certFile, pemCert(der)); err != nil {
		return "", "", err
	}
	if err := writeFile(keyFile, keyPEM); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// writeServiceAccountKeys writes the RSA key pair the apiserver signs and
// checks service-account tokens with (sa.key, sa.pub) and returns their
// paths.
func writeServiceAccountKeys(dir string) (keyFile, pubFile string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", fmt.Errorf("service-account public key: %w", err)
	}
	keyFile, pubFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := writeFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})); err != nil {
		return "", "", err
	}
	if err := writeFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})); err != nil {
		return "", "", err
	}
	return keyFile, pubFile, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		// crypto/rand does not fail on Linux; a fixed serial would still
		// make a valid certificate.
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// writeFile writes a file only root may read (keys, kubeconfigs).
func writeFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
