package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"assistant/flow/returns"
)

// DefaultAddr is where the server listens unless told otherwise: the
// loopback interface only.
const DefaultAddr = "127.0.0.1:8080"

// DefaultShutdownTimeout is how long a shutdown waits for the requests in
// flight.
const DefaultShutdownTimeout = 30 * time.Second

// RunOptions say where and how Run listens.
type RunOptions struct {
	// Addr is host:port to listen on; port 0 picks a free one.
	Addr string
	// TLSCert and TLSKey are PEM files; both or neither (plain HTTP).
	TLSCert, TLSKey string
	// ShutdownTimeout bounds the wait for requests in flight once ctx
	// ends; 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Announce receives one line once the server listens, before the
	// recovery scan: "serving on http://127.0.0.1:8080".
	Announce io.Writer
}

// Run listens, announces the address, runs the start-up recovery scan
// (the recover code path over every run whose holder is gone) while
// /readyz answers 503, then reports ready and serves until ctx ends. Then
// it drains: /readyz 503, no new connection, the requests in flight
// finish (their runs give their leases up), all within
// o.ShutdownTimeout. Errors: listening, the TLS files, a shutdown that
// did not finish in time.
func (s *Server) Run(ctx context.Context, o RunOptions) error {
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	scheme := "http"
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	if o.TLSCert != "" || o.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return fmt.Errorf("TLS certificate and key: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		scheme = "https"
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		if op, ok := err.(*net.OpError); ok {
			err = op.Err // without the address again
		}
		return fmt.Errorf("listen on %s: %w", o.Addr, err)
	}
	if srv.TLSConfig != nil {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	// Read before Serve: Serve sets up HTTP/2 and may fill srv.TLSConfig
	// on a plain listener.
	useTLS := srv.TLSConfig != nil
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if o.Announce != nil {
		fmt.Fprintf(o.Announce, "serving on %s://%s\n", scheme, ln.Addr())
	}
	s.log.Info("listening", "addr", ln.Addr().String(), "tls", useTLS)
	if err := s.recoverAtStart(ctx); err != nil && ctx.Err() == nil {
		_ = srv.Close()
		return err
	}
	if ctx.Err() == nil {
		s.SetReady()
		s.log.Info("ready")
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	s.Drain()
	s.log.Info("draining", "timeout", o.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: requests still in flight after %s: %w", o.ShutdownTimeout, err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	s.log.Info("stopped")
	return nil
}

// recoverAtStart runs the recovery scan: every running task whose holder
// is gone is taken over and continued, every task waiting on an expired
// draft ended, as recover does. A task it could not recover (busy in a
// live process) is logged and left to its holder; storage errors end the
// start-up.
func (s *Server) recoverAtStart(ctx context.Context) error {
	start := time.Now()
	s.metrics.leasesHeld.Inc()
	got, err := s.svc.Recover(ctx)
	s.metrics.leasesHeld.Dec()
	took := time.Since(start)
	s.metrics.recovery.Set(took.Seconds())
	s.metrics.recovered.Set(float64(len(got)))
	for _, r := range got {
		s.log.Info("recovered", "task", r.Task, "status", r.Status, "stage", r.Stage, "ended", r.Ended, "error", r.Error)
	}
	s.log.Info("recovery scan done", "tasks", len(got), "duration_ms", took.Milliseconds())
	var partial *returns.RecoverError
	if errors.As(err, &partial) {
		s.log.Warn("recovery scan left tasks to their holders", "err", err)
		return nil
	}
	return err
}
