package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// TLSFiles names the PEM files the API server serves TLS with, on both
// listeners (gRPC and HTTP). The files are read again when they change, so
// a rotated certificate (cert-manager rewrites a mounted Secret's files)
// is served to the next connection without a restart.
type TLSFiles struct {
	CertFile, KeyFile string
	// ClientCAFile, when set, makes the listeners ask for a client
	// certificate and refuse connections without one that this bundle of
	// CAs verifies (mutual TLS).
	ClientCAFile string
}

// certReloadCheck is how often, at most, the files' modification times
// are looked at: once a second, on a handshake.
const certReloadCheck = time.Second

// certSource holds the certificate and client CAs of TLSFiles, loaded when
// the files last changed. A change that does not load (a key that does not
// match, a half-written file) is logged and the previous pair kept, so a
// bad rotation never takes the server down.
type certSource struct {
	files TLSFiles
	log   *slog.Logger
	now   func() time.Time

	mu      sync.Mutex
	checked time.Time // the last look at the files
	stamp   string    // their sizes and modification times then
	cert    *tls.Certificate
	cas     *x509.CertPool
}

func newCertSource(files TLSFiles, log *slog.Logger) (*certSource, error) {
	if files.CertFile == "" || files.KeyFile == "" {
		return nil, errors.New("TLS needs both a certificate and a key file")
	}
	c := &certSource{files: files, log: log, now: time.Now}
	stamp, err := c.stat()
	if err != nil {
		return nil, err
	}
	if err := c.load(stamp); err != nil {
		return nil, err
	}
	return c, nil
}

// stat summarises the files' sizes and modification times (following
// symbolic links, as Kubernetes' mounted Secrets are).
func (c *certSource) stat() (string, error) {
	var stamp string
	for _, name := range []string{c.files.CertFile, c.files.KeyFile, c.files.ClientCAFile} {
		if name == "" {
			continue
		}
		fi, err := os.Stat(name)
		if err != nil {
			return "", fmt.Errorf("TLS: %w", err)
		}
		stamp += fmt.Sprintf("%s:%d:%d;", name, fi.Size(), fi.ModTime().UnixNano())
	}
	return stamp, nil
}

func (c *certSource) load(stamp string) error {
	cert, err := tls.LoadX509KeyPair(c.files.CertFile, c.files.KeyFile)
	if err != nil {
		return fmt.Errorf("TLS: loading %s and %s: %w", c.files.CertFile, c.files.KeyFile, err)
	}
	var cas *x509.CertPool
	if c.files.ClientCAFile != "" {
		pem, err := os.ReadFile(c.files.ClientCAFile)
		if err != nil {
			return fmt.Errorf("TLS: client CA: %w", err)
		}
		cas = x509.NewCertPool()
		if !cas.AppendCertsFromPEM(pem) {
			return fmt.Errorf("TLS: client CA %s holds no PEM certificate", c.files.ClientCAFile)
		}
	}
	c.cert, c.cas, c.stamp = &cert, cas, stamp
	return nil
}

// current returns the certificate and client CAs to serve now, reloading
// them first when the files changed since the last look.
func (c *certSource) current() (*tls.Certificate, *x509.CertPool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if now.Sub(c.checked) < certReloadCheck {
		return c.cert, c.cas
	}
	c.checked = now
	stamp, err := c.stat()
	if err == nil && stamp != c.stamp {
		err = c.load(stamp)
		if err == nil {
			c.log.Info("TLS certificate reloaded", "cert_file", c.files.CertFile, "not_after", c.cert.Leaf.NotAfter)
		}
	}
	if err != nil {
		c.log.Error("TLS files changed but do not load; serving the previous certificate", "err", err)
	}
	return c.cert, c.cas
}

// config is the tls.Config of one listener, offering nextProtos by ALPN.
func (c *certSource) config(nextProtos ...string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: nextProtos,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, cas := c.current()
			cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: nextProtos, Certificates: []tls.Certificate{*cert}}
			if cas != nil {
				cfg.ClientCAs, cfg.ClientAuth = cas, tls.RequireAndVerifyClientCert
			}
			return cfg, nil
		},
	}
}
