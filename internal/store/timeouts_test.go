package store

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// Issue 41, finding 3: the pool connects, runs statements and waits for
// locks within bounds, unless the URL sets its own.
func TestApplyTimeouts(t *testing.T) {
	cfg, err := pgxpool.ParseConfig("postgres://u@h/db")
	require.NoError(t, err)
	applyTimeouts(cfg)
	require.Equal(t, DefaultConnectTimeout, cfg.ConnConfig.ConnectTimeout)
	require.Equal(t, "30000", cfg.ConnConfig.RuntimeParams["statement_timeout"])
	require.Equal(t, "10000", cfg.ConnConfig.RuntimeParams["lock_timeout"])
	require.Equal(t, "60000", cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"])

	cfg, err = pgxpool.ParseConfig("postgres://u@h/db?connect_timeout=2&statement_timeout=5000&lock_timeout=0")
	require.NoError(t, err)
	applyTimeouts(cfg)
	require.Equal(t, 2*time.Second, cfg.ConnConfig.ConnectTimeout)
	require.Equal(t, "5000", cfg.ConnConfig.RuntimeParams["statement_timeout"])
	require.Equal(t, "0", cfg.ConnConfig.RuntimeParams["lock_timeout"])
}
