package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testCA is a CA that signs leaf certificates for tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// leaf signs a certificate with this serial for 127.0.0.1 (server) or a
// client, and returns its certificate and key PEM.
func (ca *testCA) leaf(t *testing.T, serial int64, client bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// writeFiles writes a pair and moves the files' times forward, so a reload
// sees them changed even within the file system's time resolution.
func writeFiles(t *testing.T, files TLSFiles, certPEM, keyPEM []byte, at time.Time) {
	t.Helper()
	require.NoError(t, os.WriteFile(files.CertFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(files.KeyFile, keyPEM, 0o600))
	require.NoError(t, os.Chtimes(files.CertFile, at, at))
	require.NoError(t, os.Chtimes(files.KeyFile, at, at))
}

// serveTLS accepts connections with cfg and completes their handshakes.
func serveTLS(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).Handshake() == nil {
					_, _ = c.Write([]byte("ok"))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// servedSerial dials addr and returns the serial of the certificate served.
func servedSerial(t *testing.T, addr string, cfg *tls.Config) (int64, error) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := io.ReadAll(c); err != nil {
		return 0, err
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
}

func TestTLSReloadsRotatedCertificate(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	files := TLSFiles{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	t0 := time.Now().Add(-time.Minute)
	c1, k1 := ca.leaf(t, 101, false)
	writeFiles(t, files, c1, k1, t0)

	src, err := newCertSource(files, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	clock := t0
	src.now = func() time.Time { return clock }
	addr := serveTLS(t, src.config("h2"))
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	client := &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}}

	serial, err := servedSerial(t, addr, client)
	require.NoError(t, err)
	require.EqualValues(t, 101, serial)

	// cert-manager rotates: the next connection gets the new certificate.
	c2, k2 := ca.leaf(t, 102, false)
	writeFiles(t, files, c2, k2, t0.Add(time.Second))
	clock = clock.Add(2 * certReloadCheck)
	serial, err = servedSerial(t, addr, client)
	require.NoError(t, err)
	require.EqualValues(t, 102, serial)

	// A rotation that does not load (a key of another certificate) keeps
	// the previous pair served.
	_, k3 := ca.leaf(t, 103, false)
	c4, _ := ca.leaf(t, 104, false)
	writeFiles(t, files, c4, k3, t0.Add(2*time.Second))
	clock = clock.Add(2 * certReloadCheck)
	serial, err = servedSerial(t, addr, client)
	require.NoError(t, err)
	require.EqualValues(t, 102, serial)
}

func TestTLSClientCA(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	files := TLSFiles{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"), ClientCAFile: filepath.Join(dir, "ca.crt")}
	c1, k1 := ca.leaf(t, 201, false)
	writeFiles(t, files, c1, k1, time.Now())
	require.NoError(t, os.WriteFile(files.ClientCAFile, ca.pem, 0o600))
	src, err := newCertSource(files, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	addr := serveTLS(t, src.config("h2"))
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)

	_, err = servedSerial(t, addr, &tls.Config{RootCAs: roots})
	require.Error(t, err, "no client certificate")

	other := newTestCA(t)
	oc, ok := other.leaf(t, 301, true)
	otherPair, err := tls.X509KeyPair(oc, ok)
	require.NoError(t, err)
	_, err = servedSerial(t, addr, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{otherPair}})
	require.Error(t, err, "a client certificate of another CA")

	cc, ck := ca.leaf(t, 202, true)
	pair, err := tls.X509KeyPair(cc, ck)
	require.NoError(t, err)
	serial, err := servedSerial(t, addr, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}})
	require.NoError(t, err)
	require.EqualValues(t, 201, serial)
}

func TestTLSFilesMustLoad(t *testing.T) {
	dir := t.TempDir()
	_, err := newCertSource(TLSFiles{CertFile: filepath.Join(dir, "missing.crt"), KeyFile: filepath.Join(dir, "missing.key")}, slog.Default())
	require.ErrorContains(t, err, "missing.crt")
	_, err = newCertSource(TLSFiles{CertFile: "x"}, slog.Default())
	require.ErrorContains(t, err, "both a certificate and a key")
}
