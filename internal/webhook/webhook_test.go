package webhook

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The example of the Standard Webhooks specification's README.
func TestSignMatchesTheSpecificationsExample(t *testing.T) {
	key, err := DecodeSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	got := Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", got)
}

func TestSecretFormat(t *testing.T) {
	require.NoError(t, ValidateSecret(NewSecret()))
	for _, bad := range []string{"", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_!!!", "whsec_c2hvcnQ="} {
		err := ValidateSecret(bad)
		require.Error(t, err, bad)
		if len(bad) > 8 {
			require.NotContains(t, err.Error(), bad[6:], "an error never quotes the secret")
		}
	}
}

func TestValidateNamesFields(t *testing.T) {
	vs := Validate(Webhook{URL: "ftp://x", EventTypes: []string{"job.succeeded", "job.exploded", "job.succeeded"},
		LabelSelector: map[string]string{"bad key!": "v"}})
	fields := map[string]bool{}
	for _, v := range vs {
		fields[v.Field] = true
	}
	require.Equal(t, map[string]bool{"url": true, "eventTypes[1]": true, "eventTypes[2]": true, "labelSelector": true}, fields)
	require.Empty(t, Validate(Webhook{URL: "https://ci.example.com/hook?x=1", EventTypes: Topics}))
	for _, u := range []string{"", "https://user:pw@example.com/", "https://example.com/#f", "/relative", "https:///nohost"} {
		_, err := ParseURL(u)
		require.Error(t, err, u)
	}
}

func TestPolicy(t *testing.T) {
	def := Policy{}
	for _, a := range []string{"127.0.0.1", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"fe80::1", "fd00::1", "0.0.0.0", "100.64.0.1", "224.0.0.1", "::ffff:10.0.0.1"} {
		err := def.CheckAddr("h", netip.MustParseAddr(a))
		require.ErrorIs(t, err, ErrNotAllowed, a)
	}
	require.NoError(t, def.CheckAddr("h", netip.MustParseAddr("93.184.216.34")))

	lo := Policy{AllowLoopback: true}
	require.NoError(t, lo.CheckAddr("h", netip.MustParseAddr("127.0.0.1")))
	require.ErrorIs(t, lo.CheckAddr("h", netip.MustParseAddr("10.0.0.1")), ErrNotAllowed)

	p, err := ParsePolicy([]string{"10.20.0.0/16", "hooks.example.com", "*.ci.example.org"}, false)
	require.NoError(t, err)
	require.NoError(t, p.CheckAddr("x", netip.MustParseAddr("10.20.3.4")), "a listed CIDR, private or not")
	require.NoError(t, p.CheckAddr("hooks.example.com", netip.MustParseAddr("93.184.216.34")))
	require.NoError(t, p.CheckAddr("a.ci.example.org", netip.MustParseAddr("93.184.216.34")))
	require.ErrorIs(t, p.CheckAddr("other.example.com", netip.MustParseAddr("93.184.216.34")), ErrNotAllowed)
	require.ErrorIs(t, p.CheckAddr("hooks.example.com", netip.MustParseAddr("10.0.0.1")), ErrNotAllowed,
		"a listed host's private address outside the CIDRs")
	_, err = ParsePolicy([]string{"http://x/"}, false)
	require.Error(t, err)
}

func TestHostsFileAndDialRecheck(t *testing.T) {
	f := filepath.Join(t.TempDir(), "hosts")
	require.NoError(t, os.WriteFile(f, []byte("127.0.0.1 receiver.test\n"), 0o600))
	p := Policy{AllowLoopback: true, Resolver: HostsFile(f)}
	require.NoError(t, p.CheckURL(context.Background(), "http://receiver.test:1/"))
	require.NoError(t, os.WriteFile(f, []byte("10.9.9.9 receiver.test # moved\n"), 0o600))
	err := p.CheckURL(context.Background(), "http://receiver.test:1/")
	require.ErrorIs(t, err, ErrNotAllowed)
	_, err = p.DialContext(time.Second)(context.Background(), "tcp", "receiver.test:80")
	require.ErrorIs(t, err, ErrNotAllowed)
	require.True(t, strings.Contains(err.Error(), "10.9.9.9"))
}

func TestBackoff(t *testing.T) {
	for n := int32(1); n < 30; n++ {
		d := Backoff(n)
		want := min(BackoffBase<<min(n-1, 20), BackoffMax)
		require.GreaterOrEqual(t, d, want/2, n)
		require.LessOrEqual(t, d, want, n)
	}
	now := time.Now()
	require.False(t, GiveUp(now.Add(-time.Hour), now, time.Hour))
	require.True(t, GiveUp(now.Add(-23*time.Hour-30*time.Minute), now, time.Hour))
	require.False(t, errors.Is(nil, ErrNotAllowed))
}
