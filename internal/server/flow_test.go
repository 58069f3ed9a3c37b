package server

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The gRPC server's flow-control window is fixed (flowWindow): it
// advertises the window a whole request fits in, and after the
// connection's first WINDOW_UPDATE answers calls without a PING or
// WINDOW_UPDATE of its own (grpc-go's bandwidth-delay estimate sent both
// for every request at one client).
func TestFixedFlowWindowSendsNoPingPerCall(t *testing.T) {
	s := startServer(t, &stubJobs{})
	c, err := net.Dial("tcp", s.GRPCAddr())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = c.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	fr := http2.NewFramer(c, c)
	require.NoError(t, fr.WriteSettings())

	msg, err := proto.Marshal(&healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	body := append([]byte{0, 0, 0, 0, byte(len(msg))}, msg...)
	var hdr bytes.Buffer
	enc := hpack.NewEncoder(&hdr)
	var window uint32
	for i, stream := range []uint32{1, 3, 5, 7} {
		hdr.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/grpc.health.v1.Health/Check"},
			{":authority", "trainyard"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			require.NoError(t, enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
		}
		require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: hdr.Bytes(), EndHeaders: true}))
		require.NoError(t, fr.WriteData(stream, true, body))
		for ended := false; !ended; {
			f, err := fr.ReadFrame()
			require.NoError(t, err, "call %d", i)
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
					window = v
				}
				if !f.IsAck() {
					require.NoError(t, fr.WriteSettingsAck())
				}
			case *http2.PingFrame:
				require.True(t, f.IsAck(), "call %d: the server sent a PING of its own", i)
			case *http2.WindowUpdateFrame:
				// Once, at the start: the connection's window from HTTP/2's
				// 65,535 bytes to the fixed one.
				require.True(t, i == 0 && f.StreamID == 0 && f.Increment == uint32(flowWindow(4<<20))-65535,
					"call %d: the server sent a WINDOW_UPDATE for %d bytes of stream %d", i, f.Increment, f.StreamID)
			case *http2.HeadersFrame:
				ended = f.StreamID == stream && f.StreamEnded()
			}
		}
	}
	require.Equal(t, uint32(flowWindow(4<<20)), window, "the stream window advertised: a default 4 MiB request fits")
}
