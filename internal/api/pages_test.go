package api

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trainyard/trainyard/internal/resname"
)

func TestPageTokens(t *testing.T) {
	q := queryHash("jobs", "acme", "state = RUNNING")
	tok := encodePageToken(42, q)
	got, err := decodePageToken("pageToken", tok, q)
	require.NoError(t, err)
	require.EqualValues(t, 42, got)

	require.Empty(t, encodePageToken(0, q), "no cursor, no next page")

	// Bound to its query: another tenant or filter is refused.
	for _, other := range []uint64{queryHash("jobs", "other", "state = RUNNING"), queryHash("jobs", "acme", "")} {
		_, err = decodePageToken("pageToken", tok, other)
		require.Equal(t, codes.InvalidArgument, status.Code(err))
	}
	for _, junk := range []string{"x", "e30", "!!!"} {
		_, err = decodePageToken("pageToken", junk, q)
		require.Equal(t, codes.InvalidArgument, status.Code(err), junk)
	}
	// Hash parts are separated: ("ab","c") differs from ("a","bc").
	require.NotEqual(t, queryHash("ab", "c"), queryHash("a", "bc"))

	s := encodeStringToken("tenant-9", q)
	after, err := decodeStringToken("pageToken", s, q)
	require.NoError(t, err)
	require.Equal(t, "tenant-9", after)
	_, err = decodeStringToken("pageToken", s, q+1)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = decodeStringToken("pageToken", encodeStringToken("a\x00", q), q)
	require.Equal(t, codes.InvalidArgument, status.Code(err), "a forged token carries no NUL to the store")
}

func TestPageSize(t *testing.T) {
	for in, want := range map[int32]int{0: 50, 1: 1, 1000: 1000, 5000: 1000} {
		got, err := pageSize("pageSize", in)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
	}
	_, err := pageSize("pageSize", -1)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}

// FuzzPageToken: any token a client sends decodes to a usable cursor (a
// positive id, a tenant id) bound to its query, or is INVALID_ARGUMENT
// naming the field; a token we made decodes to what we put in.
func FuzzPageToken(f *testing.F) {
	q := queryHash("jobs", "acme", "state = RUNNING")
	f.Add(encodePageToken(42, q), int64(42), "tenant-9")
	f.Add(encodeStringToken("tenant-9", q), int64(1), "a")
	for _, junk := range []string{"", "x", "e30", "!!!", "eyJjIjotMSwicSI6MX0"} {
		f.Add(junk, int64(0), "")
	}
	f.Fuzz(func(t *testing.T, tok string, cursor int64, after string) {
		for _, query := range []uint64{q, q + 1} {
			got, err := decodePageToken("pageToken", tok, query)
			if err != nil {
				require.Equal(t, codes.InvalidArgument, status.Code(err))
				require.Equal(t, "pageToken", badRequest(t, err).GetFieldViolations()[0].GetField())
			} else if tok != "" {
				require.Positive(t, got)
			}
			if tok == "" {
				continue
			}
			id, err := decodeStringToken("pageToken", tok, query)
			if err == nil {
				require.True(t, resname.IsID(id), "a tenant id reaches the store: %q", id)
			} else {
				require.Equal(t, codes.InvalidArgument, status.Code(err))
			}
		}
		if cursor > 0 {
			got, err := decodePageToken("pageToken", encodePageToken(cursor, q), q)
			require.NoError(t, err)
			require.Equal(t, cursor, got)
		}
		if resname.IsID(after) {
			got, err := decodeStringToken("pageToken", encodeStringToken(after, q), q)
			require.NoError(t, err)
			require.Equal(t, after, got)
		}
	})
}
