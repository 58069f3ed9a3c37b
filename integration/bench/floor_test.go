//go:build bench || integration

package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trainyard/trainyard/internal/auth"
	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// The store section's floor rows (issue 47): what a gRPC unary call costs
// on this machine with nothing behind it, so the table shows what gRPC
// itself costs and what Trainyard adds on top. The floor is this test
// binary run again as a server of its own (a process, like serve), whose
// CreateJob answers a job that serve returned during the warm-up: the same
// request and response sizes, no work. With an issuer, it first
// authenticates the bearer token as serve does (auth.OIDC, its token cache
// on), and authorizes nothing.

const (
	floorEnvResponse = "TRAINYARD_BENCH_FLOOR_RESPONSE" // a file with a pb.Job
	floorEnvIssuer   = "TRAINYARD_BENCH_FLOOR_ISSUER"   // OIDC issuer URL, or empty
)

// floorMain runs the floor server when this binary was started as one and
// reports whether it was.
func floorMain() bool {
	path := os.Getenv(floorEnvResponse)
	if path == "" {
		return false
	}
	if err := serveFloor(path, os.Getenv(floorEnvIssuer)); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	return true
}

type floorJobs struct {
	pb.UnimplementedJobServiceServer
	resp *pb.Job
}

func (f *floorJobs) CreateJob(context.Context, *pb.CreateJobRequest) (*pb.Job, error) {
	return f.resp, nil
}

func serveFloor(path, issuer string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	resp := &pb.Job{}
	if err := proto.Unmarshal(raw, resp); err != nil {
		return err
	}
	var opts []grpc.ServerOption
	if issuer != "" {
		o, err := auth.NewOIDC(context.Background(), auth.OIDCConfig{Issuer: issuer, Audience: "trainyard"})
		if err != nil {
			return err
		}
		opts = append(opts, grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			var tok string
			if v := md.Get("authorization"); len(v) == 1 {
				tok, _ = strings.CutPrefix(v[0], "Bearer ")
			}
			if _, err := o.Authenticate(ctx, tok); err != nil {
				return nil, status.Error(codes.Unauthenticated, "unauthenticated")
			}
			return h(ctx, req)
		}))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := grpc.NewServer(opts...)
	pb.RegisterJobServiceServer(srv, &floorJobs{resp: resp})
	fmt.Println(ln.Addr().String()) // the parent reads the address
	return srv.Serve(ln)            // until killed
}

// startFloor runs the floor server as a child process answering resp,
// authenticating against issuer when it is not empty, and returns its
// address and pid.
func startFloor(b *testing.B, resp *pb.Job, issuer string) (addr string, pid int) {
	raw, err := proto.Marshal(resp)
	if err != nil {
		b.Fatal(err)
	}
	path := b.TempDir() + "/response.pb"
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floorEnvResponse+"="+path, floorEnvIssuer+"="+issuer)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("floor server: %v", err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		s.Scan()
		line <- strings.TrimSpace(s.Text())
	}()
	select {
	case addr = <-line:
	case <-time.After(30 * time.Second):
		b.Fatal("floor server: no address after 30 s")
	}
	if addr == "" {
		b.Fatal("floor server exited before listening")
	}
	return addr, cmd.Process.Pid
}
