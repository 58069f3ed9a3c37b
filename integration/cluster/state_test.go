package cluster

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The cluster's ports are free, distinct, and outside the range the
// kernel hands out as source ports, so that a component restarted on its
// port finds it free.
func TestFreePortsAreOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := ephemeralPorts()
	require.Less(t, lo, hi)
	ports, err := FreePorts(6)
	require.NoError(t, err)
	require.Len(t, ports, 6)
	seen := map[int]bool{}
	for _, p := range ports {
		require.False(t, seen[p], "port %d twice", p)
		seen[p] = true
		require.Less(t, p, lo, "port %d is in the ephemeral range %d-%d", p, lo, hi)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		require.NoError(t, err, "port %d", p)
		require.NoError(t, l.Close())
	}
}
