// Package migrations holds Trainyard's golang-migrate SQL files, embedded so
// the binary migrates without files on disk. internal/store.Migrate runs them.
package migrations

import "embed"

// FS holds the NNNNNN_name.up.sql / .down.sql files.
//
//go:embed *.sql
var FS embed.FS
