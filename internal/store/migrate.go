package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers pgx5://
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/trainyard/trainyard/migrations"
)

// Migrate applies the embedded migrations: direction "up" applies all
// pending ones, "down" reverts all of them. Concurrent callers are
// serialized by golang-migrate's advisory lock. Cancelling ctx stops after
// the migration that is running.
func Migrate(ctx context.Context, databaseURL, direction string) error {
	m, err := newMigrate(databaseURL)
	if err != nil {
		return err
	}
	defer m.Close()

	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			m.GracefulStop <- true
		case <-done:
		}
	}()

	switch direction {
	case "up":
		err = m.Up()
	case "down":
		err = m.Down()
	default:
		return fmt.Errorf("store: migrate: direction %q is neither \"up\" nor \"down\"", direction)
	}
	if errors.Is(err, migrate.ErrNoChange) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("store: migrate %s: %v", direction, err)
	}
	return ctx.Err()
}

// MigrationVersion reports the applied schema version (0 when none) and
// whether a migration failed halfway (dirty).
func MigrationVersion(ctx context.Context, databaseURL string) (version uint, dirty bool, err error) {
	_ = ctx // golang-migrate takes no context; the lookup is one query.
	m, err := newMigrate(databaseURL)
	if err != nil {
		return 0, false, err
	}
	defer m.Close()
	version, dirty, err = m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: migration version: %v", err)
	}
	return version, dirty, nil
}

func newMigrate(databaseURL string) (*migrate.Migrate, error) {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return nil, fmt.Errorf("store: migrations: %v", err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, migrateURL(databaseURL))
	if err != nil {
		return nil, fmt.Errorf("store: migrate: %v", err)
	}
	return m, nil
}

// migrateURL turns a postgres:// URL into the pgx/v5 driver's pgx5:// scheme.
func migrateURL(databaseURL string) string {
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		if strings.HasPrefix(databaseURL, scheme) {
			return "pgx5://" + strings.TrimPrefix(databaseURL, scheme)
		}
	}
	return databaseURL
}
