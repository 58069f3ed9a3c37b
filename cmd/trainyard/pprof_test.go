package main

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every command has --pprof-addr, off by default.
func TestEveryCommandHasPprofAddrOffByDefault(t *testing.T) {
	for _, cmd := range newRoot().Commands() {
		f := cmd.Flags().Lookup("pprof-addr")
		require.NotNil(t, f, "trainyard %s", cmd.Name())
		require.Empty(t, f.DefValue, "trainyard %s", cmd.Name())
	}
}

func TestPprofServes(t *testing.T) {
	var log bytes.Buffer
	stop, err := servePprof("127.0.0.1:0", &log)
	require.NoError(t, err)
	defer stop()
	addr := regexp.MustCompile(`http://(\S+)/debug/pprof/`).FindStringSubmatch(log.String())
	require.NotNil(t, addr, log.String())
	resp, err := http.Get("http://" + addr[1] + "/debug/pprof/goroutine?debug=1")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "goroutine profile")
}
