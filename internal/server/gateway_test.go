package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
