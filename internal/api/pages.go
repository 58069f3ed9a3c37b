package api

import (
	"encoding/base64"
	"encoding/json"
	"hash/fnv"

	"github.com/trainyard/trainyard/internal/resname"
)

// Page tokens are opaque to clients: a keyset cursor plus a hash of the
// query they belong to, so a token cannot be replayed against another
// filter or tenant (AIP-158).
type pageToken struct {
	Cursor int64  `json:"c,omitempty"`
	After  string `json:"a,omitempty"`
	Query  uint64 `json:"q"`
}

func queryHash(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}

func encodePageToken(cursor int64, query uint64) string {
	if cursor == 0 {
		return ""
	}
	b, _ := json.Marshal(pageToken{Cursor: cursor, Query: query})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePageToken(field, tok string, query uint64) (int64, error) {
	if tok == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	var pt pageToken
	if err != nil || json.Unmarshal(b, &pt) != nil || pt.Cursor <= 0 {
		return 0, invalid(violation(field, "is not a token returned by this method"))
	}
	if pt.Query != query {
		return 0, invalid(violation(field, "belongs to a different parent or filter"))
	}
	return pt.Cursor, nil
}

func encodeStringToken(after string, query uint64) string {
	b, _ := json.Marshal(pageToken{After: after, Query: query})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeStringToken(field, tok string, query uint64) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	var pt pageToken
	// After is a tenant id that goes into a query: a forged token must not
	// carry bytes Postgres refuses.
	if err != nil || json.Unmarshal(b, &pt) != nil || !resname.IsID(pt.After) {
		return "", invalid(violation(field, "is not a token returned by this method"))
	}
	if pt.Query != query {
		return "", invalid(violation(field, "belongs to a different caller"))
	}
	return pt.After, nil
}

const (
	defaultPageSize = 50
	maxPageSize     = 1000
)

func pageSize(field string, n int32) (int, error) {
	switch {
	case n < 0:
		return 0, invalid(violation(field, "must not be negative"))
	case n == 0:
		return defaultPageSize, nil
	case n > maxPageSize:
		return maxPageSize, nil
	}
	return int(n), nil
}

func encodeTenantToken(lastID string, q uint64) string {
	return encodeStringToken(lastID, q)
}

func decodeTenantToken(tok string, q uint64) (string, error) {
	return decodeStringToken("pageToken", tok, q)
}
