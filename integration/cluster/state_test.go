package cluster

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

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

// A restart waits for its ports: it returns once the listener holding one
// is gone, and names the port when it stays taken.
func TestWaitPortsFree(t *testing.T) {
	ports, err := FreePorts(2)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ports[1]))
	require.NoError(t, err)
	released := make(chan time.Time, 1)
	time.AfterFunc(200*time.Millisecond, func() { released <- time.Now(); _ = l.Close() })
	require.NoError(t, waitPortsFree(context.Background(), ports))
	require.False(t, time.Now().Before(<-released), "returned before the port was free")

	l, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ports[0]))
	require.NoError(t, err)
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = waitPortsFree(ctx, ports)
	require.ErrorContains(t, err, "port "+strconv.Itoa(ports[0])+" still in use")
}
