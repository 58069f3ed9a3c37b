package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envName is the environment variable that stands in for a flag:
// --oidc-issuer reads TRAINYARD_OIDC_ISSUER.
func envName(flag string) string {
	return "TRAINYARD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// bindEnv fills every flag not given on the command line from its
// environment variable. --database-url also reads DATABASE_URL.
func bindEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || err != nil {
			return
		}
		names := []string{envName(f.Name)}
		if f.Name == "database-url" {
			names = append(names, "DATABASE_URL")
		}
		for _, n := range names {
			if v, ok := os.LookupEnv(n); ok {
				if serr := fs.Set(f.Name, v); serr != nil {
					err = fmt.Errorf("%s: %w", n, serr)
				}
				return
			}
		}
	})
	return err
}

// documentEnv appends the environment variable to every flag's help text.
func documentEnv(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		env := "$" + envName(f.Name)
		if f.Name == "database-url" {
			env += ", else $DATABASE_URL"
		}
		f.Usage += " [" + env + "]"
	})
}

type logFlags struct {
	level  string
	format string
}

func (l *logFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
}

func (l *logFlags) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", l.format)
}
