package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"assistant/business"
	"assistant/checkpoints/postgres"
	"assistant/flow/returns"
	"assistant/runs"
)

// This file looks at the schemas of a --store server: which of the two
// exist and whose they are, before a store opens; Wait's check that they
// still do; and verify over the two schemas (docs/postgres.md).

// schemas looks at which of the two schemas exist, whether each is ours
// and not newer than this build (returns.ServerSchemas.Check refuses
// either before a store opens), and, when one of the two is missing, how
// many runs or task records the other holds, changing nothing.
func (s *server) schemas(ctx context.Context) (returns.ServerSchemas, error) {
	found := returns.ServerSchemas{Where: s.where}
	var err error
	if found.CheckpointsFound, err = s.schemaFound(ctx, returns.CheckpointsSchema, postgres.SchemaVersion()); err != nil {
		return found, err
	}
	if found.BusinessFound, err = s.schemaFound(ctx, returns.BusinessSchema, business.PGSchemaVersion()); err != nil {
		return found, err
	}
	if found.CheckpointsFound.Exists && found.CheckpointsFound.Version == 0 || found.BusinessFound.Exists && found.BusinessFound.Version == 0 {
		return found, nil // refused: another program's tables are not read
	}
	err = s.conn.QueryRow(ctx, `SELECT to_regclass('checkpoints.threads') IS NOT NULL, to_regclass('business.tasks') IS NOT NULL`).
		Scan(&found.Checkpoints, &found.Business)
	if err != nil {
		return found, fmt.Errorf("look at %s: %w", s.where, err)
	}
	// The counts matter only when one schema is missing (Check's lost
	// runs or tasks); with both there, counting would read every run and
	// task record at the start of every command.
	if found.Checkpoints && !found.Business {
		if err := s.conn.QueryRow(ctx, `SELECT count(*) FROM checkpoints.threads`).Scan(&found.Threads); err != nil {
			return found, fmt.Errorf("look at %s: %w", s.where, err)
		}
	}
	if found.Business && !found.Checkpoints {
		if err := s.conn.QueryRow(ctx, `SELECT count(*) FROM business.tasks`).Scan(&found.Tasks); err != nil {
			return found, fmt.Errorf("look at %s: %w", s.where, err)
		}
	}
	return found, nil
}

// schemaFound looks at the schema name: whether it exists and the
// highest version its schema_version records (0 without that table or
// a row, or with a table of that name another program made). known is
// the newest version this build knows.
func (s *server) schemaFound(ctx context.Context, name string, known int) (returns.SchemaFound, error) {
	f := returns.SchemaFound{Known: known}
	var versioned bool
	if err := s.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1), to_regclass($2) IS NOT NULL`,
		name, pgx.Identifier{name, "schema_version"}.Sanitize()).Scan(&f.Exists, &versioned); err != nil {
		return f, fmt.Errorf("look at %s: %w", s.where, err)
	}
	if !versioned {
		return f, nil
	}
	var rows int
	err := s.conn.QueryRow(ctx, `SELECT coalesce(max(version), 0), count(*) FROM `+pgx.Identifier{name, "schema_version"}.Sanitize()).Scan(&f.Version, &rows)
	f.Empty = err == nil && rows == 0
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42703" || pgErr.Code == "42883") {
		// undefined_column, undefined_function: a schema_version without
		// a version column, or of another type: not a table this program
		// made.
		return returns.SchemaFound{Exists: true, Known: known}, nil
	}
	if err != nil {
		return f, fmt.Errorf("look at %s: %w", s.where, err)
	}
	return f, nil
}

// gone is Wait's check that the stores are still there: ErrNotFound once
// the business schema was dropped. A lost connection is its own error.
func (s *server) gone(ctx context.Context) error {
	var there bool
	if err := s.conn.QueryRow(ctx, `SELECT to_regclass('business.tasks') IS NOT NULL`).Scan(&there); err != nil {
		return fmt.Errorf("look at %s: %w", s.where, err)
	}
	if !there {
		return fmt.Errorf("%w: the schema business of %s was dropped while waiting; nothing more can happen to the task there", returns.ErrNotFound, s.where)
	}
	return nil
}

// verifyServer checks the stores on the server of --store (returns.Verify
// over the two schemas). A pair every other command refuses (a schema lost
// while the other holds runs or task records, or two schemas of different
// identities) is reported as an error finding, as on a data dir; a
// database without either schema is ErrNotFound. A server with no free
// connection slot is waited for as serverStores waits for it.
func (a *app) verifyServer(ctx context.Context) (*returns.VerifyReport, error) {
	var rep *returns.VerifyReport
	err := a.withinConnectTimeout(ctx, func(deadline time.Time) (held bool, err error) {
		rep, held, err = a.verifyServerWithin(ctx, deadline)
		return held, err
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// verifyServerWithin is one try of verifyServer, the server's first
// connection waiting for a free slot until deadline, each store's at most
// business.PGHeldBusyWait; held says a store's opening found the server
// busy (withinConnectTimeout).
func (a *app) verifyServerWithin(ctx context.Context, deadline time.Time) (rep *returns.VerifyReport, held bool, err error) {
	srv, err := connectServer(ctx, a.store, waitUntil(deadline, time.Until(deadline)))
	if err != nil {
		return nil, false, err
	}
	defer srv.close()
	found, err := srv.schemas(ctx)
	if err != nil {
		return nil, false, err
	}
	v := returns.ServerVerify{}
	err = found.Check(returns.OpenExisting)
	if errors.Is(err, runs.ErrLostCheckpoints) || errors.Is(err, returns.ErrLostBusiness) {
		// Nothing to open: the report says which schema is lost.
		v.Lost = found.Lost()
		if err := srv.schemaFacts(ctx, &v, v.Lost.File != returns.CheckpointsSchema, v.Lost.File != returns.BusinessSchema); err != nil {
			return nil, false, err
		}
		rep, err = returns.Verify(ctx, returns.VerifyOptions{DataDir: redactURL(a.store), Host: a.host, Server: &v, Wording: a.fixWording})
		return rep, false, err
	}
	if err != nil {
		return nil, false, err
	}
	cps, err := postgres.Open(ctx, a.store, postgres.Options{OpenBusyWait: waitUntil(deadline, postgres.HeldBusyWait)})
	if err != nil {
		return nil, errors.Is(err, business.ErrPGServerBusy), a.storeErr(srv, err)
	}
	defer cps.Close()
	id, err := cps.DataDirID(ctx)
	if err != nil {
		return nil, false, a.storeErr(srv, err)
	}
	desk, err := business.OpenPostgres(ctx, a.store, business.Options{Now: srv.now, DataDirID: id, PGOpenBusyWait: waitUntil(deadline, business.PGHeldBusyWait)})
	switch {
	case errors.Is(err, business.ErrPairMismatch):
		// Reported from the identities read below; no cross-store check.
	case err != nil:
		return nil, errors.Is(err, business.ErrPGServerBusy), a.storeErr(srv, err)
	default:
		defer desk.Close()
		v.Desk = desk
	}
	if err := srv.schemaFacts(ctx, &v, true, true); err != nil {
		return nil, false, err
	}
	rep, err = returns.Verify(ctx, returns.VerifyOptions{DataDir: redactURL(a.store), Checkpoints: cps, Host: a.host, Server: &v, Wording: a.fixWording})
	return rep, false, err
}

// schemaFacts reads into v the schema version and the data dir identity
// of the checkpoint schema (cps) and the business schema (desk), of those
// asked for (a lost schema has none to read).
func (s *server) schemaFacts(ctx context.Context, v *returns.ServerVerify, cps, desk bool) error {
	read := func(schema string, version *int64, id *string) error {
		var paired bool
		q := `SELECT coalesce((SELECT max(version) FROM ` + pgx.Identifier{schema, "schema_version"}.Sanitize() + `), 0), to_regclass($1) IS NOT NULL`
		if err := s.conn.QueryRow(ctx, q, pgx.Identifier{schema, "data_dir"}.Sanitize()).Scan(version, &paired); err != nil {
			return fmt.Errorf("look at %s: %w", s.where, err)
		}
		if !paired {
			return nil // a schema older than the pairing: no identity
		}
		q = `SELECT coalesce((SELECT id FROM ` + pgx.Identifier{schema, "data_dir"}.Sanitize() + ` WHERE one = 1), '')`
		if err := s.conn.QueryRow(ctx, q).Scan(id); err != nil {
			return fmt.Errorf("look at %s: %w", s.where, err)
		}
		return nil
	}
	if cps {
		if err := read(returns.CheckpointsSchema, &v.CheckpointsVersion, &v.CheckpointsDataDirID); err != nil {
			return err
		}
	}
	if desk {
		return read(returns.BusinessSchema, &v.BusinessVersion, &v.BusinessDataDirID)
	}
	return nil
}
