//go:build integration

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/trainyard/trainyard/integration/harness"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// tlsCA signs serving certificates for 127.0.0.1.
type tlsCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTLSCA(t *testing.T, dir string) *tlsCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	return &tlsCA{cert: cert, key: key}
}

// issue writes a serving certificate with this serial for 127.0.0.1 into
// dir's tls.crt and tls.key, as cert-manager rewrites a mounted Secret.
func (ca *tlsCA) issue(t *testing.T, dir string, serial int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "trainyard"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	// Write aside and rename, so the server never reads a half-written pair.
	for name, block := range map[string]*pem.Block{"tls.crt": {Type: "CERTIFICATE", Bytes: der}, "tls.key": {Type: "EC PRIVATE KEY", Bytes: kder}} {
		tmp := filepath.Join(dir, "."+name)
		require.NoError(t, os.WriteFile(tmp, pem.EncodeToMemory(block), 0o600))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, name)))
	}
}

var tlsServingLine = regexp.MustCompile(`msg=serving grpc=(\S+) http=(\S+) tls=true`)

// The API server serves TLS itself on both ports: gRPC clients (Go,
// tyctl, the Python client) and HTTPS reach it with the CA, plaintext does
// not, and a rotated certificate is served without a restart.
func TestTLSServedNatively(t *testing.T) {
	env := harness.Start(t, harness.Options{})
	env.CreateTenant(t, "secure", harness.Subject("alice", pb.Role_ROLE_EDITOR))
	dir := t.TempDir()
	ca := newTLSCA(t, dir)
	ca.issue(t, dir, 100)
	p := harness.StartProcess(t, "serve-tls", harness.Binary(t), append(env.ServeArgs(),
		"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-key-file", filepath.Join(dir, "tls.key"))...)
	m := p.WaitFor(t, tlsServingLine, time.Minute)
	grpcAddr, httpAddr := m[1], m[2]

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	served := func() int64 {
		conn, err := tls.Dial("tcp", httpAddr, &tls.Config{RootCAs: roots})
		require.NoError(t, err)
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	https := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	require.Eventually(t, func() bool {
		resp, err := https.Get("https://" + httpAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 100*time.Millisecond)
	require.EqualValues(t, 100, served())

	// REST over HTTPS with a token.
	req, err := http.NewRequest(http.MethodGet, "https://"+httpAddr+"/v1/tenants/secure/jobs", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+env.Token("alice"))
	resp, err := https.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 2, resp.ProtoMajor, "HTTP/2 by ALPN")

	// gRPC with TLS; plaintext gRPC and plain HTTP do not get through.
	conn := harness.Dial(t, grpcAddr, env.Token("alice"), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots})))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = pb.NewJobServiceClient(conn).ListJobs(ctx, &pb.ListJobsRequest{Parent: "tenants/secure"})
	require.NoError(t, err)
	plain, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer plain.Close()
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	_, err = pb.NewJobServiceClient(plain).ListJobs(pctx, &pb.ListJobsRequest{Parent: "tenants/secure"})
	require.Error(t, err, "plaintext gRPC to a TLS port")
	if resp, err := http.Get("http://" + httpAddr + "/healthz"); err == nil {
		resp.Body.Close()
		require.NotEqual(t, http.StatusOK, resp.StatusCode, "plain HTTP to a TLS port")
	}

	// tyctl and the Python client with the CA file.
	tyctl := filepath.Join(filepath.Dir(harness.Binary(t)), "tyctl")
	if _, err := os.Stat(tyctl); err != nil {
		tyctl = filepath.Join(t.TempDir(), "tyctl")
		out, err := exec.Command("go", "build", "-o", tyctl, "github.com/trainyard/trainyard/cmd/tyctl").CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	clientEnv := append(os.Environ(), "TYCTL_SERVER="+grpcAddr, "TYCTL_TENANT=secure", "TYCTL_TOKEN="+env.Token("alice"),
		"TYCTL_CA_FILE="+filepath.Join(dir, "ca.crt"), "TYCTL_CONFIG="+filepath.Join(t.TempDir(), "config.yaml"))
	cmd := exec.Command(tyctl, "jobs", "list")
	cmd.Env = clientEnv
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "tyctl over TLS: %s", out)
	py := exec.Command(python(t), "-c", "import trainyard; c = trainyard.Client(); print('jobs', len(list(c.list())))")
	py.Dir, py.Env = clientDir(), append(clientEnv, "PYTHONPATH="+clientDir())
	out, err = py.CombinedOutput()
	require.NoError(t, err, "the Python client over TLS: %s", out)
	require.Contains(t, string(out), "jobs 0")

	// cert-manager renews: the next connection gets the new certificate.
	ca.issue(t, dir, 101)
	require.Eventually(t, func() bool { return served() == 101 }, 30*time.Second, 200*time.Millisecond)
}
