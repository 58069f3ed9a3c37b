package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/cli/browser"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	pb "github.com/trainyard/trainyard/proto/trainyard/v1"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], newApp(os.Stdin, os.Stdout, os.Stderr, os.LookupEnv))
	stop()
	os.Exit(code)
}

// app is one invocation of tyctl: its streams, environment, flags and the
// connection, opened on first use.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) (string, bool)
	readFile       func(string) ([]byte, error)
	now            func() time.Time
	// openURL shows a URL to the person (tyctl login, jobs tensorboard).
	openURL func(string) error

	flags globalFlags
	fs    *pflag.FlagSet // the running command's flags: which were given
	cfg   *settings
	conn  *grpc.ClientConn
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) (string, bool)) *app {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, readFile: os.ReadFile, now: time.Now}
	a.openURL = func(url string) error {
		browser.Stdout, browser.Stderr = a.stderr, a.stderr
		return browser.OpenURL(url)
	}
	return a
}

// run executes tyctl with args and returns the exit code.
func run(ctx context.Context, args []string, a *app) int {
	root := newRoot(a)
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	if a.conn != nil {
		_ = a.conn.Close()
	}
	return a.exitCode(ctx, err)
}

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "tyctl",
		Short: "Submit and follow distributed TensorFlow training jobs on Trainyard",
		Long: `tyctl talks to a Trainyard server over gRPC.

Every flag below also reads an environment variable (a flag given wins):
  TYCTL_SERVER, TYCTL_TENANT, TYCTL_TOKEN, TYCTL_TOKEN_FILE, TYCTL_CA_FILE, TYCTL_INSECURE.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.fs = cmd.Flags()
			switch a.flags.output {
			case outTable, outJSON, outYAML:
				return nil
			}
			return fmt.Errorf("-o %s: want table, json or yaml", a.flags.output)
		},
	}
	a.flags.register(root.PersistentFlags())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nsee '%s --help'", err, c.CommandPath())
	})
	root.AddCommand(newJobsCmd(a), newTenantsCmd(a), newCohortsCmd(a), newClustersCmd(a), newSecretsCmd(a), newAuditCmd(a), newUsageCmd(a), newWebhooksCmd(a), newExperimentsCmd(a), newVersionCmd(a))
	root.AddCommand(newConvertCmd(a), newLoginCmd(a), newLogoutCmd(a), newWhoamiCmd(a))
	return root
}

// settings resolves flags and environment once.
func (a *app) settings() (settings, error) {
	if a.cfg == nil {
		fs := a.fs
		if fs == nil {
			fs = pflag.NewFlagSet("none", pflag.ContinueOnError)
		}
		s, err := resolve(fs, a.flags, a.getenv, a.readFile)
		if err != nil {
			return settings{}, err
		}
		if s.login != nil {
			ctx, cancel := context.WithTimeout(context.Background(), a.flags.timeout)
			err := a.refreshLogin(ctx, &s)
			cancel()
			if err != nil {
				return settings{}, err
			}
			// Calls made later (a long watch) renew it again when due;
			// gRPC may ask for it from several calls at once.
			var mu sync.Mutex
			s.renew = func(ctx context.Context) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				err := a.refreshLogin(ctx, &s)
				return s.token, err
			}
		}
		a.cfg = &s
	}
	return *a.cfg, nil
}

func (a *app) connect() (*grpc.ClientConn, error) {
	if a.conn != nil {
		return a.conn, nil
	}
	s, err := a.settings()
	if err != nil {
		return nil, err
	}
	if a.conn, err = dial(s, "tyctl/"+clientVersion()); err != nil {
		return nil, err
	}
	return a.conn, nil
}

func (a *app) jobClient() (pb.JobServiceClient, error) {
	conn, err := a.connect()
	if err != nil {
		return nil, err
	}
	return pb.NewJobServiceClient(conn), nil
}

func (a *app) tenantClient() (pb.TenantServiceClient, error) {
	conn, err := a.connect()
	if err != nil {
		return nil, err
	}
	return pb.NewTenantServiceClient(conn), nil
}

// callCtx bounds one unary call by --timeout.
func (a *app) callCtx(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), a.flags.timeout)
}

// readInput reads a file, or standard input for "-".
func (a *app) readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(a.stdin)
	}
	return a.readFile(path)
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print tyctl's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(a.stdout, "tyctl %s (%s, %s/%s)\n", clientVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

// clientVersion is the -X version, else the module version the binary was
// built from (go install …@v1.2.3), else "devel" and the commit if known.
func clientVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "devel-" + s.Value[:12]
		}
	}
	return "devel"
}
