package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestServeMaxStreamsFlag(t *testing.T) {
	for _, cmd := range []string{"serve", "dev"} {
		var f = newServeCmd().Flags()
		if cmd == "dev" {
			f = newDevCmd().Flags()
		}
		fl := f.Lookup("max-streams-per-caller")
		require.NotNil(t, fl, cmd)
		require.Equal(t, "32", fl.DefValue)
		require.Contains(t, fl.Usage, "TRAINYARD_MAX_STREAMS_PER_CALLER")
	}
}

func TestServeConnectionFlags(t *testing.T) {
	for _, cmd := range []string{"serve", "dev"} {
		f := newServeCmd().Flags()
		if cmd == "dev" {
			f = newDevCmd().Flags()
		}
		for name, def := range map[string]string{"handshake-timeout": "10s", "request-timeout": "30s", "max-connections": "4096", "max-stream-lifetime": "30m0s", "audit-retention": "8760h0m0s"} {
			fl := f.Lookup(name)
			require.NotNil(t, fl, "%s --%s", cmd, name)
			require.Equal(t, def, fl.DefValue)
		}
	}
}

// --watch-bookmark-every must be positive: 0 would otherwise mean the
// default without saying so.
func TestServeWatchBookmarkFlag(t *testing.T) {
	for _, cmd := range []string{"serve", "dev"} {
		f := newServeCmd().Flags()
		if cmd == "dev" {
			f = newDevCmd().Flags()
		}
		require.Equal(t, "30s", f.Lookup("watch-bookmark-every").DefValue, cmd)
	}
	require.NoError(t, (&serveFlags{watchBookmark: 30 * time.Second}).validate())
	for _, v := range []time.Duration{0, -time.Second} {
		err := (&serveFlags{watchBookmark: v}).validate()
		require.ErrorContains(t, err, "--watch-bookmark-every must be positive")
	}
}
