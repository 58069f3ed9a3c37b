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

// pki is the throw-away trust material of one cluster: a CA, the API server's
// serving certificate, one client certificate per identity, and the key pair
// that signs service-account tokens. Everything lives in <state>/pki.
type pki struct {
	dir    string
	caCert *x509.Certificate
	caKey  crypto.Signer
	caPEM  []byte
}

// identity is a client certificate subject. The API server maps CN to the
// user name and O to groups.
type identity struct {
	file   string // base name under pki/
	user   string
	groups []string
}

var (
	adminIdentity     = identity{"admin", "trainyard-admin", []string{"system:masters"}}
	kcmIdentity       = identity{"kube-controller-manager", "system:kube-controller-manager", nil}
	schedulerIdentity = identity{"kube-scheduler", "system:kube-scheduler", nil}
	// kwok patches the status of nodes and pods, renews node leases and
	// deletes pods: the built-in system:node role is scoped by the Node
	// authorizer to one node name, so kwok acts as a cluster admin instead.
	kwokIdentity = identity{"kwok", "kwok-controller", []string{"system:masters"}}
	// frontProxyIdentity is the API server's own client certificate towards
	// aggregated API servers, issued by the separate front-proxy CA.
	frontProxyIdentity = identity{"front-proxy-client", "front-proxy-client", nil}
	// kubeletClientIdentity is the API server's client certificate towards
	// kubelets (--kubelet-client-certificate), here kwok's server, as kubeadm
	// names it. kwok v0.8.0 asks for no client certificate and checks none,
	// so the identity grants nothing; it is what a real kubelet would see.
	kubeletClientIdentity = identity{"kube-apiserver-kubelet-client", "kube-apiserver-kubelet-client", nil}
)

// kwokServingName is the base name of the serving certificate of kwok's
// kubelet server, valid for the nodes' address (127.0.0.1) only.
const kwokServingName = "kwok-kubelet"

// newPKI creates a CA named cn with its files in dir.
func newPKI(dir, cn string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, caCert: cert, caKey: key, caPEM: pemBlock("CERTIFICATE", der)}
	if err := os.WriteFile(p.path("ca.crt"), p.caPEM, 0o644); err != nil {
		return nil, err
	}
	if err := writeKey(p.path("ca.key"), key); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// serving writes <name>.crt/.key valid for loopback and the in-cluster names
// of the kubernetes Service.
func (p *pki) serving(name string) error {
	return p.servingFor(name,
		[]string{
			"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(kubernetesServiceIP)})
}

// servingFor writes <name>.crt/.key, a server certificate for exactly these
// names and addresses.
func (p *pki) servingFor(name string, dnsNames []string, ips []net.IP) error {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		DNSNames:    dnsNames,
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return p.issue(name, tmpl)
}

// client writes <file>.crt/.key for an identity.
func (p *pki) client(id identity) error {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: id.user, Organization: id.groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return p.issue(id.file, tmpl)
}

func (p *pki) issue(name string, tmpl *x509.Certificate) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(365 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, key.Public(), p.caKey)
	if err != nil {
		return fmt.Errorf("issue %s: %w", name, err)
	}
	if err := os.WriteFile(p.path(name+".crt"), pemBlock("CERTIFICATE", der), 0o644); err != nil {
		return err
	}
	return writeKey(p.path(name+".key"), key)
}

// serviceAccountKeys writes sa.key/sa.pub: the API server signs and verifies
// service-account tokens with them, the controller manager signs legacy
// token Secrets with the private half.
func (p *pki) serviceAccountKeys() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := writeKey(p.path("sa.key"), key); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	return os.WriteFile(p.path("sa.pub"), pemBlock("PUBLIC KEY", pub), 0o644)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pemBlock("PRIVATE KEY", der), 0o600)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}
