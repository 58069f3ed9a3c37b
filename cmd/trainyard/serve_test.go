package main

import (
	"testing"

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
		for name, def := range map[string]string{"handshake-timeout": "10s", "max-connections": "4096", "max-stream-lifetime": "30m0s", "audit-retention": "8760h0m0s"} {
			fl := f.Lookup(name)
			require.NotNil(t, fl, "%s --%s", cmd, name)
			require.Equal(t, def, fl.DefValue)
		}
	}
}
