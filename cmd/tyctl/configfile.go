package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"
)

// tyctl's config file: what tyctl login stores (the server, tenant and
// TLS settings it was given, and the login's tokens), read by every later
// command below the flags and the environment, and by the Python client
// (clients/python). It holds tokens, so it is written mode 0600 in a
// directory of mode 0700, atomically (a temp file renamed), and nothing
// ever prints it.

const envConfig = "TYCTL_CONFIG"

// configFile is the file's content. Field names are part of its format:
// the Python client reads them too.
type configFile struct {
	Server   string      `json:"server,omitempty"`
	Tenant   string      `json:"tenant,omitempty"`
	Insecure bool        `json:"insecure,omitempty"`
	CAFile   string      `json:"caFile,omitempty"`
	Login    *loginState `json:"login,omitempty"`
}

// loginState is one OIDC login: the ID token sent as the bearer, the
// refresh token that renews it, and where to renew it.
type loginState struct {
	Issuer   string `json:"issuer"`
	ClientID string `json:"clientId"`
	// ClientSecret is set only for issuers that give CLIs a (public) secret.
	ClientSecret string    `json:"clientSecret,omitempty"`
	IDToken      string    `json:"idToken"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry"`
}

// String keeps tokens out of anything that prints a loginState.
func (l *loginState) String() string { return "login(" + l.Issuer + ", tokens redacted)" }

// configPath is $TYCTL_CONFIG, else tyctl/config.yaml in the user's config
// directory (~/.config on Linux).
func configPath(getenv func(string) (string, bool)) (string, error) {
	if p, ok := getenv(envConfig); ok && p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config directory (%v): set %s", err, envConfig)
	}
	return filepath.Join(dir, "tyctl", "config.yaml"), nil
}

// configFileOf reads tyctl's config file, wherever the environment says it is.
func (a *app) configFileOf() (string, configFile, error) {
	path, err := configPath(a.getenv)
	if err != nil {
		return "", configFile{}, err
	}
	cfg, err := loadConfig(path, a.readFile)
	return path, cfg, err
}

// loadConfig reads the config file; a missing file is an empty config.
func loadConfig(path string, readFile func(string) ([]byte, error)) (configFile, error) {
	var c configFile
	b, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return c, fmt.Errorf("%s: %v", path, err)
	}
	return c, nil
}

// saveConfig writes the config file atomically, readable by its owner only.
func saveConfig(path string, c configFile) error {
	b, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	b = append([]byte("# tyctl's settings, written by tyctl login; it holds tokens, keep it private.\n"), b...)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
