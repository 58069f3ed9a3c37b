package auth

import (
	"crypto/sha256"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// tokenCache remembers the principals of tokens that verified, so a caller
// that sends the same bearer token on every call pays for one signature
// check, not one per call (an RSA verification was 17 % of serve's CPU per
// submit, issue 47).
//
// An entry is the token's outcome, nothing more: authorization (tenant
// memberships) is decided apart, so taking someone out of a group's tenant
// is still immediate (doc.go, "Authorization"). An entry is used only while
//   - the token has not expired (its own exp claim, on the authenticator's
//     clock), and
//   - the issuer's key set is the one it was verified against: any JWKS
//     fetch that succeeds (a rotation) invalidates every entry, which is
//     then verified again against the keys as they are now.
//
// Keys are SHA-256 digests of the raw token, so the cache holds no bearer
// credential. It is bounded (least recently used entries go first) and
// holds only successes: a bad token is checked again each time, as before.
type tokenCache struct {
	entries *lru.Cache[[sha256.Size]byte, cachedToken]
}

type cachedToken struct {
	principal Principal
	keys      uint64 // the key set's version it verified against
}

// defaultTokenCacheSize bounds the cache: each entry is a few hundred bytes.
const defaultTokenCacheSize = 10_000

func newTokenCache(size int) *tokenCache {
	if size <= 0 {
		return nil
	}
	c, err := lru.New[[sha256.Size]byte, cachedToken](size)
	if err != nil {
		panic(err) // only for a size <= 0, excluded above
	}
	return &tokenCache{entries: c}
}

// get returns the principal of raw if it verified against key set version
// keys and has not expired at now.
func (c *tokenCache) get(raw string, keys uint64, now time.Time) (Principal, bool) {
	if c == nil {
		return Principal{}, false
	}
	k := sha256.Sum256([]byte(raw))
	e, ok := c.entries.Get(k)
	if !ok {
		return Principal{}, false
	}
	if e.keys != keys || !now.Before(e.principal.Expiry) {
		c.entries.Remove(k)
		return Principal{}, false
	}
	p := e.principal
	p.Groups = slices.Clone(p.Groups) // callers may not share the entry's
	return p, true
}

func (c *tokenCache) put(raw string, keys uint64, p Principal) {
	if c == nil || p.Expiry.IsZero() {
		return
	}
	p.Groups = slices.Clone(p.Groups)
	c.entries.Add(sha256.Sum256([]byte(raw)), cachedToken{principal: p, keys: keys})
}
