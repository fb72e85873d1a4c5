package business

import (
	"context"
	"testing"
	"time"

	"assistant/internal/pgtest"
)

func TestPostgresSmoke(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	s, err := OpenPostgres(ctx, url, Options{Seed: seedCSV(t), Now: fixedClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, _, err := s.PrepareDraft(ctx, "t1", "A3003", "demo-user", "size", time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	a, reused, err := s.Submit(ctx, d.ID, "demo-user", t0)
	t.Log(a, reused, err)
	os, err := s.Orders(ctx, "demo-user")
	t.Log(len(os), err)
}
