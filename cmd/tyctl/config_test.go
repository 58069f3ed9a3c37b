package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// resolveWith parses args as the root's persistent flags and resolves them
// against env and a fake file system.
func resolveWith(t *testing.T, args []string, env, files map[string]string) (settings, error) {
	t.Helper()
	var g globalFlags
	fs := pflag.NewFlagSet("tyctl", pflag.ContinueOnError)
	g.register(fs)
	require.NoError(t, fs.Parse(args))
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	return resolve(fs, g, getenv, fakeFiles(files))
}

func fakeFiles(files map[string]string) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		if b, ok := files[path]; ok {
			return []byte(b), nil
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
}

func TestPrecedenceFlagEnvDefault(t *testing.T) {
	env := map[string]string{envServer: "env.example.com:443", envTenant: "env-tenant", envCAFile: "/env/ca.pem"}

	s, err := resolveWith(t, nil, nil, nil)
	require.NoError(t, err)
	require.Equal(t, settings{server: defaultServer}, s, "defaults")

	s, err = resolveWith(t, nil, env, nil)
	require.NoError(t, err)
	require.Equal(t, settings{server: "env.example.com:443", tenant: "env-tenant", caFile: "/env/ca.pem"}, s, "environment over defaults")

	s, err = resolveWith(t, []string{"--server", "flag:9090", "--tenant", "flag-tenant", "--ca-file", "/flag/ca.pem"}, env, nil)
	require.NoError(t, err)
	require.Equal(t, settings{server: "flag:9090", tenant: "flag-tenant", caFile: "/flag/ca.pem"}, s, "flags over environment")

	// A flag set to its default value still wins over the environment.
	s, err = resolveWith(t, []string{"--server", defaultServer}, env, nil)
	require.NoError(t, err)
	require.Equal(t, defaultServer, s.server)
}

func TestInsecureFromEnv(t *testing.T) {
	s, err := resolveWith(t, nil, map[string]string{envInsecure: "true"}, nil)
	require.NoError(t, err)
	require.True(t, s.insecure)

	s, err = resolveWith(t, []string{"--insecure=false"}, map[string]string{envInsecure: "1"}, nil)
	require.NoError(t, err)
	require.False(t, s.insecure, "the flag wins")

	_, err = resolveWith(t, nil, map[string]string{envInsecure: "plaintext"}, nil)
	require.EqualError(t, err, `TYCTL_INSECURE="plaintext": want true or false`)
}

func TestTokenPrecedence(t *testing.T) {
	files := map[string]string{"/flag.tok": "from-flag-file\n", "/env.tok": "  from-env-file  "}
	env := map[string]string{envToken: "from-env", envTokenFile: "/env.tok"}
	for _, tc := range []struct {
		name       string
		args       []string
		env        map[string]string
		wantToken  string
		wantSource string
	}{
		{"--token first", []string{"--token", "from-flag"}, env, "from-flag", "--token"},
		{"--token-file next", []string{"--token-file", "/flag.tok"}, env, "from-flag-file", "--token-file /flag.tok"},
		{"then TYCTL_TOKEN", nil, env, "from-env", "$TYCTL_TOKEN"},
		{"then TYCTL_TOKEN_FILE", nil, map[string]string{envTokenFile: "/env.tok"}, "from-env-file", "$TYCTL_TOKEN_FILE (/env.tok)"},
		{"none", nil, nil, "", ""},
		{"a Bearer prefix is dropped", []string{"--token", "Bearer abc.def"}, nil, "abc.def", "--token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := resolveWith(t, tc.args, tc.env, files)
			require.NoError(t, err)
			require.Equal(t, tc.wantToken, s.token)
			require.Equal(t, tc.wantSource, s.tokenSource)
		})
	}
}

func TestTokenErrorsNeverShowTheToken(t *testing.T) {
	files := map[string]string{"/two.tok": "secret-one secret-two", "/empty.tok": "\n"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"both flags", []string{"--token", "secret-one", "--token-file", "/two.tok"}, "give --token or --token-file, not both"},
		{"two tokens in a file", []string{"--token-file", "/two.tok"}, "the token from --token-file /two.tok contains whitespace or control characters; want a single bearer token"},
		{"empty file", []string{"--token-file", "/empty.tok"}, "the token from --token-file /empty.tok is empty"},
		{"missing file", []string{"--token-file", "/nope"}, "reading the token: open /nope: file does not exist"},
		{"plaintext to a remote host", []string{"--token", "secret-one", "--insecure", "--server", "trainyard.example.com:9090"},
			"refusing to send the token in plaintext to trainyard.example.com:9090: --insecure is for loopback addresses (localhost, 127.0.0.1, ::1); drop it to use TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolveWith(t, tc.args, nil, files)
			require.EqualError(t, err, tc.want)
			require.NotContains(t, err.Error(), "secret-one")
		})
	}
}

func TestInsecureLoopbackOnlyWithToken(t *testing.T) {
	for _, server := range []string{"localhost:9090", "127.0.0.1:9090", "[::1]:9090", "unix:///run/trainyard.sock", "dns:///localhost:9090"} {
		_, err := resolveWith(t, []string{"--token", "tok-12345", "--insecure", "--server", server}, nil, nil)
		require.NoError(t, err, server)
	}
	// Without a token there is nothing to leak.
	_, err := resolveWith(t, []string{"--insecure", "--server", "10.0.0.5:9090"}, nil, nil)
	require.NoError(t, err)
}

func TestParseMember(t *testing.T) {
	m, err := parseMember("group:ml-team=editor")
	require.NoError(t, err)
	require.Equal(t, "group:ml-team=editor", formatMember(m))
	m, err = parseMember("subject:alice=ADMIN")
	require.NoError(t, err)
	require.Equal(t, "subject:alice=admin", formatMember(m))
	m, err = parseMember("group:cn=ml,ou=groups=viewer")
	require.NoError(t, err, "the role follows the last '='")
	require.Equal(t, "cn=ml,ou=groups", m.GetGroup())

	for _, bad := range []string{"ml-team=editor", "group:ml-team", "group:ml-team=owner", "team:ml=editor", "group:=editor"} {
		_, err := parseMember(bad)
		require.Error(t, err, bad)
	}
}

func TestSecretDataNeverEchoesValues(t *testing.T) {
	a := &app{readFile: fakeFiles(map[string]string{"/k/api-key": "v-from-file", "/bin": "\xff\xfe"})}
	data, err := a.secretData([]string{"user=v-literal"}, []string{"/k/api-key", "pw=/k/api-key"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"user": "v-literal", "api-key": "v-from-file", "pw": "v-from-file"}, data)

	for _, tc := range []struct {
		literals, files []string
	}{
		{[]string{"v-literal"}, nil},                  // no key
		{[]string{"k=v-literal", "k=v-literal"}, nil}, // twice
		{[]string{"api-key=v-literal"}, []string{"/k/api-key"}},
		{nil, []string{"/bin"}}, // not text
		{nil, nil},
	} {
		_, err := a.secretData(tc.literals, tc.files)
		require.Error(t, err)
		require.NotContains(t, err.Error(), "v-literal")
		require.NotContains(t, err.Error(), "v-from-file")
	}
	_, err = a.secretData(nil, []string{"/missing"})
	require.True(t, errors.Is(err, fs.ErrNotExist))
}

// A boolean flag is shown as kubectl shows one: `--insecure`, not
// `--insecure[=true|false]` (pflag v1.1.0's usage, which is why go.mod
// holds pflag at v1.0.x).
func TestHelpShowsBooleanFlagsPlainly(t *testing.T) {
	var out bytes.Buffer
	a := &app{stdout: &out, stderr: &out, getenv: func(string) (string, bool) { return "", false }}
	if code := run(context.Background(), []string{"--help"}, a); code != 0 {
		t.Fatalf("tyctl --help exited %d: %s", code, out.String())
	}
	help := out.String()
	if !strings.Contains(help, "--insecure ") || strings.Contains(help, "[=true|false]") {
		t.Errorf("help's boolean flags:\n%s", help)
	}
}
