package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/pflag"
)

// Environment variables. A flag given on the command line wins over its
// variable, which wins over the flag's default.
const (
	envServer    = "TYCTL_SERVER"
	envTenant    = "TYCTL_TENANT"
	envToken     = "TYCTL_TOKEN"
	envTokenFile = "TYCTL_TOKEN_FILE"
	envCAFile    = "TYCTL_CA_FILE"
	envInsecure  = "TYCTL_INSECURE"
)

const defaultServer = "localhost:9090"

// globalFlags are the root command's persistent flags, as parsed.
type globalFlags struct {
	server    string
	tenant    string
	token     string
	tokenFile string
	caFile    string
	insecure  bool
	output    string
	timeout   time.Duration
}

func (g *globalFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&g.server, "server", defaultServer, "Trainyard gRPC address host:port (env "+envServer+")")
	fs.StringVar(&g.tenant, "tenant", "", "tenant to work in (env "+envTenant+")")
	fs.StringVar(&g.token, "token", "", "bearer token; prefer --token-file or "+envToken+", flags show up in ps and shell history")
	fs.StringVar(&g.tokenFile, "token-file", "", "file holding the bearer token (env "+envTokenFile+")")
	fs.StringVar(&g.caFile, "ca-file", "", "PEM CA certificates trusted besides the system roots (env "+envCAFile+")")
	fs.BoolVar(&g.insecure, "insecure", false, "plaintext gRPC, for a server on a loopback address (env "+envInsecure+"=true)")
	fs.StringVarP(&g.output, "output", "o", outTable, "output format: table, json or yaml")
	fs.DurationVar(&g.timeout, "timeout", 30*time.Second, "deadline of each request; streams (logs, watch) have none")
}

// settings are what the flags and the environment resolve to.
type settings struct {
	server   string
	tenant   string
	caFile   string
	insecure bool
	// token is sent as "authorization: Bearer <token>" and never printed.
	token string
	// tokenSource says where the token came from, for hints.
	tokenSource string
	// login is set when the token is the one tyctl login stored in the
	// config file at configPath; it is refreshed when it expires.
	login      *loginState
	configPath string
	// renew returns the stored login's token, renewed first when due.
	renew func(context.Context) (string, error)
}

// resolve applies the precedence flag > environment > config file >
// default. fs tells which flags were given.
func resolve(fs *pflag.FlagSet, g globalFlags, getenv func(string) (string, bool), readFile func(string) ([]byte, error)) (settings, error) {
	s := settings{server: g.server, tenant: g.tenant, caFile: g.caFile, insecure: g.insecure}
	path, err := configPath(getenv)
	if err != nil {
		return settings{}, err
	}
	cfg, err := loadConfig(path, readFile)
	if err != nil {
		return settings{}, err
	}
	fromConfig := func(flag, value string, dst *string) {
		if !fs.Changed(flag) && value != "" {
			*dst = value
		}
	}
	fromConfig("server", cfg.Server, &s.server)
	fromConfig("tenant", cfg.Tenant, &s.tenant)
	fromConfig("ca-file", cfg.CAFile, &s.caFile)
	if !fs.Changed("insecure") && cfg.Insecure {
		s.insecure = true
	}
	fromEnv := func(flag, env string, dst *string) {
		if fs.Changed(flag) {
			return
		}
		if v, ok := getenv(env); ok && v != "" {
			*dst = v
		}
	}
	fromEnv("server", envServer, &s.server)
	fromEnv("tenant", envTenant, &s.tenant)
	fromEnv("ca-file", envCAFile, &s.caFile)
	if v, ok := getenv(envInsecure); ok && v != "" && !fs.Changed("insecure") {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return settings{}, fmt.Errorf("%s=%q: want true or false", envInsecure, v)
		}
		s.insecure = b
	}
	if s.server == "" {
		return settings{}, fmt.Errorf("no server: pass --server host:port or set %s", envServer)
	}
	if s.token, s.tokenSource, err = resolveToken(fs, g, getenv, readFile); err != nil {
		return settings{}, err
	}
	if l := cfg.Login; s.token == "" && l != nil && l.IDToken != "" {
		s.token, s.tokenSource, s.login, s.configPath = l.IDToken, "tyctl login ("+path+")", l, path
	}
	if s.insecure && s.token != "" && !isLoopback(s.server) {
		return settings{}, fmt.Errorf("refusing to send the token in plaintext to %s: --insecure is for loopback addresses (localhost, 127.0.0.1, ::1); drop it to use TLS", s.server)
	}
	return s, nil
}

// resolveToken finds the bearer token: --token, --token-file (not both),
// then TYCTL_TOKEN, then TYCTL_TOKEN_FILE. No token is not an error here:
// the server says Unauthenticated and the error hint explains.
func resolveToken(fs *pflag.FlagSet, g globalFlags, getenv func(string) (string, bool), readFile func(string) ([]byte, error)) (token, source string, err error) {
	fromFile := func(path string) (string, error) {
		b, err := readFile(path)
		if err != nil {
			return "", fmt.Errorf("reading the token: %w", err)
		}
		return string(b), nil
	}
	envValue, hasEnvValue := getenv(envToken)
	envFile, hasEnvFile := getenv(envTokenFile)
	switch {
	case fs.Changed("token") && fs.Changed("token-file"):
		return "", "", errors.New("give --token or --token-file, not both")
	case fs.Changed("token"):
		token, source = g.token, "--token"
	case fs.Changed("token-file"):
		source = "--token-file " + g.tokenFile
		if token, err = fromFile(g.tokenFile); err != nil {
			return "", "", err
		}
	case hasEnvValue && envValue != "":
		token, source = envValue, "$"+envToken
	case hasEnvFile && envFile != "":
		source = "$" + envTokenFile + " (" + envFile + ")"
		if token, err = fromFile(envFile); err != nil {
			return "", "", err
		}
	default:
		return "", "", nil
	}
	token = strings.TrimSpace(token)
	// A token copied together with its scheme is still the token.
	if len(token) > 7 && strings.EqualFold(token[:7], "bearer ") {
		token = strings.TrimSpace(token[7:])
	}
	if token == "" {
		return "", "", fmt.Errorf("the token from %s is empty", source)
	}
	if strings.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		// Say where, never what: the token must not reach a terminal or a log.
		return "", "", fmt.Errorf("the token from %s contains whitespace or control characters; want a single bearer token", source)
	}
	return token, source, nil
}

// isLoopback reports whether a gRPC target stays on this machine.
func isLoopback(target string) bool {
	if strings.HasPrefix(target, "unix:") || strings.HasPrefix(target, "unix-abstract:") {
		return true
	}
	target = strings.TrimPrefix(target, "dns:///")
	target = strings.TrimPrefix(target, "passthrough:///")
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		host = strings.Trim(target, "[]")
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
