package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimitBody(t *testing.T) {
	var got string
	h := limitBody(10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
	}))
	for name, tc := range map[string]struct {
		body    string
		chunked bool
		status  int
	}{
		"small":             {body: "0123456789", status: http.StatusOK},
		"declared too big":  {body: "0123456789x", status: http.StatusRequestEntityTooLarge},
		"chunked too big":   {body: strings.Repeat("x", 100), chunked: true, status: http.StatusRequestEntityTooLarge},
		"chunked and small": {body: "abc", chunked: true, status: http.StatusOK},
	} {
		t.Run(name, func(t *testing.T) {
			got = ""
			req := httptest.NewRequest("POST", "/v1/tenants/a/jobs", strings.NewReader(tc.body))
			if tc.chunked {
				req.ContentLength = -1
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, tc.status, rec.Code)
			if tc.status == http.StatusOK {
				require.Equal(t, tc.body, got)
			} else {
				require.Empty(t, got, "the handler must not run")
				require.Contains(t, rec.Body.String(), `"code":8`)
			}
		})
	}
}

// A response that streams for longer than the server's ReadTimeout (a log
// stream, a watch over REST) keeps its context: net/http lifts the read
// deadline once the request has been read.
func TestStreamOutlivesReadTimeout(t *testing.T) {
	const timeout = 150 * time.Millisecond
	srv := httptest.NewUnstartedServer(limitBody(1<<20, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 4 {
			select {
			case <-r.Context().Done():
				_, _ = io.WriteString(w, "cancelled\n")
				return
			case <-time.After(timeout):
			}
			_, _ = io.WriteString(w, "chunk "+strconv.Itoa(i)+"\n")
			_ = http.NewResponseController(w).Flush()
		}
	})))
	srv.Config.ReadTimeout = timeout
	srv.Start()
	defer srv.Close()

	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"x":1}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "chunk 0\nchunk 1\nchunk 2\nchunk 3\n", string(body))
}

// A bearer token goes into the TensorBoard cookie only when it fits a
// cookie value unquoted (JWTs do); others get a clear refusal instead of a
// cookie net/http would silently mangle.
func TestValidCookieValue(t *testing.T) {
	for v, ok := range map[string]bool{
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ2ZXJhIn0.c2lnbmF0dXJl": true,
		"carol-local-token": true,
		"has space":         false,
		`has"quote`:         false,
		"has;semicolon":     false,
		"has,comma":         false,
		`back\slash`:        false,
		"non-ascii-é":       false,
		"tab\there":         false,
	} {
		require.Equal(t, ok, validCookieValue(v), v)
	}
}
