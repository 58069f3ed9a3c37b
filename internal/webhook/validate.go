package webhook

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/trainyard/trainyard/internal/job"
)

// Limits enforced by Validate.
const (
	MaxIDLength          = 40 // SecretName must stay within a DNS-1123 subdomain
	MaxURLLength         = 2048
	MaxDescriptionLength = 500 // characters
	MaxSelectorLabels    = 16
	// A signing secret is 24 to 64 random bytes (Standard Webhooks).
	MinSecretBytes = 24
	MaxSecretBytes = 64
	// SecretPrefixWhsec starts a signing secret as Standard Webhooks writes it.
	SecretPrefixWhsec = "whsec_"
)

// ValidateID checks a webhook id: a DNS-1123 label of at most MaxIDLength.
func ValidateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("webhook id is required")
	case len(id) > MaxIDLength:
		return fmt.Errorf("webhook id %q is %d characters; at most %d are allowed", id, len(id), MaxIDLength)
	}
	if msgs := validation.IsDNS1123Label(id); len(msgs) > 0 {
		return fmt.Errorf("webhook id %q: %s", id, strings.Join(msgs, "; "))
	}
	return nil
}

// Validate checks a webhook's fields (not its id, not whether its host is
// allowed: Policy.CheckURL). Paths are the API's JSON names.
func Validate(w Webhook) []job.FieldViolation {
	var v job.Violations
	if _, err := ParseURL(w.URL); err != nil {
		v.Add("url", "%v", err)
	}
	if len(w.EventTypes) == 0 {
		v.Add("eventTypes", "at least one event type is required (one of %s)", strings.Join(Topics, ", "))
	}
	seen := map[string]bool{}
	for i, t := range w.EventTypes {
		switch {
		case !KnownTopic(t):
			v.Add(fmt.Sprintf("eventTypes[%d]", i), "unknown event type %q", t)
		case seen[t]:
			v.Add(fmt.Sprintf("eventTypes[%d]", i), "event type %q is listed twice", t)
		}
		seen[t] = true
	}
	v.Labels("labelSelector", w.LabelSelector, MaxSelectorLabels, nil)
	if n := utf8.RuneCountInString(w.Description); n > MaxDescriptionLength {
		v.Add("description", "is %d characters; at most %d are allowed", n, MaxDescriptionLength)
	} else if !utf8.ValidString(w.Description) || strings.ContainsRune(w.Description, 0) {
		v.Add("description", "must be UTF-8 text without NUL")
	}
	return v
}

// ParseURL checks a webhook URL: absolute http or https, a host, no user
// information, no fragment.
func ParseURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, fmt.Errorf("is required")
	}
	if len(s) > MaxURLLength {
		return nil, fmt.Errorf("is %d bytes; at most %d are allowed", len(s), MaxURLLength)
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("is not a URL: %v", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q: the scheme must be http or https", s)
	case u.Hostname() == "":
		return nil, fmt.Errorf("%q has no host", s)
	case u.User != nil:
		return nil, fmt.Errorf("must not carry user information (put credentials in the receiver's check of the signature)")
	case u.Fragment != "":
		return nil, fmt.Errorf("must not have a fragment")
	}
	return u, nil
}

// ValidateSecret checks a signing secret: "whsec_" and the standard
// base64 of MinSecretBytes to MaxSecretBytes bytes. The error never
// quotes the secret.
func ValidateSecret(s string) error {
	_, err := DecodeSecret(s)
	return err
}

// DecodeSecret returns a signing secret's key bytes.
func DecodeSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(s, SecretPrefixWhsec)
	if !ok {
		return nil, fmt.Errorf("must start with %q followed by base64", SecretPrefixWhsec)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("must be %q followed by standard base64 (the rest is not base64)", SecretPrefixWhsec)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return nil, fmt.Errorf("must hold %d to %d bytes, not %d", MinSecretBytes, MaxSecretBytes, len(key))
	}
	return key, nil
}

// NewSecret returns a fresh random signing secret (32 bytes).
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return SecretPrefixWhsec + base64.StdEncoding.EncodeToString(b)
}
