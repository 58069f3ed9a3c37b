package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// dial opens a client connection (lazily: nothing is sent until the first
// call). TLS uses the system roots plus --ca-file; --insecure is plaintext.
func dial(s settings, userAgent string) (*grpc.ClientConn, error) {
	var tc credentials.TransportCredentials
	if s.insecure {
		tc = insecure.NewCredentials()
	} else {
		pool, err := rootCAs(s.caFile)
		if err != nil {
			return nil, err
		}
		tc = credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(tc),
		grpc.WithUserAgent(userAgent),
		grpc.WithDefaultServiceConfig(retryServiceConfig),
		// gRPC's default of 4 MiB is less than a GetJob of a large job can
		// be: every replica keeps a log tail of up to a few KiB in its
		// status. Lists and watches leave the tails out.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxReceiveBytes)),
	}
	if s.token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: s.token, requireTLS: !s.insecure, renew: s.renew}))
	}
	return grpc.NewClient(s.server, opts...)
}

// rootCAs are the system's roots plus --ca-file's, for gRPC and for the
// TensorBoard proxy's REST calls alike.
func rootCAs(caFile string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if caFile == "" {
		return pool, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the CA file: %w", err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	return pool, nil
}

// maxReceiveBytes is the largest response tyctl accepts.
const maxReceiveBytes = 64 << 20

// bearer sends the token on every call. With TLS, gRPC refuses to send it
// over a connection that is not secure.
type bearer struct {
	token      string
	requireTLS bool
	// renew, when set, gives the token of each call: tyctl login's,
	// renewed when it expires.
	renew func(context.Context) (string, error)
}

func (b bearer) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	token := b.token
	if b.renew != nil {
		var err error
		if token, err = b.renew(ctx); err != nil {
			return nil, err
		}
	}
	return map[string]string{"authorization": "Bearer " + token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.requireTLS }

// String and GoString keep the token out of anything that prints a bearer.
func (b bearer) String() string   { return "bearer(redacted)" }
func (b bearer) GoString() string { return b.String() }

// retryServiceConfig retries calls that are safe to repeat when the server
// is briefly unavailable (a restart, a load balancer shuffle). CreateJob
// ImportTFJob and BatchCreateJobs are safe because tyctl always sends
// request ids: the
// server returns the job the first attempt created. DeleteJob, CreateTenant and DeleteTenant are
// left out: a repeat would report NotFound or AlreadyExists for a call that
// worked.
const retryServiceConfig = `{
  "methodConfig": [{
    "name": [
      {"service": "trainyard.v1.JobService", "method": "CreateJob"},
      {"service": "trainyard.v1.JobService", "method": "ImportTFJob"},
      {"service": "trainyard.v1.JobService", "method": "BatchCreateJobs"},
      {"service": "trainyard.v1.JobService", "method": "GetJob"},
      {"service": "trainyard.v1.JobService", "method": "ListJobs"},
      {"service": "trainyard.v1.JobService", "method": "CancelJob"},
      {"service": "trainyard.v1.JobService", "method": "ListJobEvents"},
      {"service": "trainyard.v1.TenantService", "method": "GetTenant"},
      {"service": "trainyard.v1.TenantService", "method": "ListTenants"},
      {"service": "trainyard.v1.TenantService", "method": "PutSecret"},
      {"service": "trainyard.v1.TenantService", "method": "ListSecrets"}
    ],
    "retryPolicy": {
      "maxAttempts": 4,
      "initialBackoff": "0.25s",
      "maxBackoff": "2s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
}`
