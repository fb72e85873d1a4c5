package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
	api "assistant/server"
)

const serveLong = `serve runs one long-lived process with a JSON API over the data dir (or
--store's database): start, show, list, answer and wait for tasks, read
their history and orders (docs/server.md). Before it reports ready
(GET /readyz 200) it runs the recovery scan of every run whose process
is gone, as recover does. Requests sign in with an access token
(Authorization: Bearer TOKEN, made by approvers token USER): the token's
person is the user, --user has no say. Behind a proxy that signs people
in, --trust-header X-Forwarded-User --trusted-proxy 10.0.0.5 takes the
person that header names, from those addresses only (IPs or CIDR
prefixes, repeated or comma-separated); from any other address the
header is ignored and logged. Failed sign-ins are limited per address
and per person (429 with Retry-After).

Its first line on stdout is the address it listens on, "serving on
http://127.0.0.1:8080" (with --addr 127.0.0.1:0 the port it picked); the
access log goes to stderr, one JSON object a line. SIGTERM or SIGINT
drains it: /readyz answers 503, no new connection is taken, the requests
in flight finish and give their leases up, and it exits 0 within
--shutdown-timeout (1 when requests were still in flight then).`

const serveExample = `  assistant approvers token demo-user        # prints the token once
  assistant serve --addr 127.0.0.1:8080 &
  curl -s --retry 10 --retry-connrefused --retry-delay 1 http://127.0.0.1:8080/readyz   # once it listens`

// serveOptions are serve's flags.
type serveOptions struct {
	app *app
	api.RunOptions
	// TrustHeader and TrustedProxies are --trust-header and
	// --trusted-proxy (each value an IP or CIDR, or several
	// comma-separated).
	TrustHeader    string
	TrustedProxies []string
}

// newCmdServe is serve; runF runs it (serveRun, or a test's).
func newCmdServe(a *app, runF func(context.Context, *serveOptions) error) *cobra.Command {
	opts := &serveOptions{app: a}
	c := &cobra.Command{
		Use:     "serve [--addr 127.0.0.1:8080] [--tls-cert F --tls-key F] [--trust-header H --trusted-proxy CIDR,…] [--shutdown-timeout 30s]",
		Short:   "Serve the JSON API: sign-in by access token, the same rules as the commands",
		Long:    serveLong,
		Example: serveExample,
		Args:    exactArgs(0, "serve takes no arguments"),
		RunE:    func(c *cobra.Command, _ []string) error { return runF(c.Context(), opts) },
	}
	c.Flags().StringVar(&opts.Addr, "addr", api.DefaultAddr, "host:port to listen on (port 0: a free one, printed on the first line)")
	c.Flags().StringVar(&opts.TLSCert, "tls-cert", "", "PEM certificate file: serve HTTPS (with --tls-key)")
	c.Flags().StringVar(&opts.TLSKey, "tls-key", "", "PEM private key file of --tls-cert")
	c.Flags().Var(newDurationValue(api.DefaultShutdownTimeout, &opts.ShutdownTimeout), "shutdown-timeout", "how long a SIGTERM or SIGINT waits for the requests in flight")
	c.Flags().StringVar(&opts.TrustHeader, "trust-header", "", "sign in as the person this header names (such as X-Forwarded-User) when a request comes from a --trusted-proxy")
	c.Flags().StringSliceVar(&opts.TrustedProxies, "trusted-proxy", nil, "an IP address or CIDR prefix whose --trust-header is believed (repeated or comma-separated)")
	return c
}

// serveRun opens the stores (a missing data dir is not found: nobody
// could sign in to it, since making a token makes it) and serves until a signal ends the command's context; a drain
// that finished in time is exit 0.
func serveRun(ctx context.Context, opts *serveOptions) error {
	a := opts.app
	if (opts.TLSCert == "") != (opts.TLSKey == "") {
		return usageErr("--tls-cert and --tls-key go together: give both, or neither for plain HTTP")
	}
	if opts.ShutdownTimeout <= 0 {
		return usageErr("--shutdown-timeout must be positive, not %s", opts.ShutdownTimeout)
	}
	if (opts.TrustHeader == "") != (len(opts.TrustedProxies) == 0) {
		return usageErr("--trust-header and --trusted-proxy go together: the header is believed only from the proxies named")
	}
	var proxies []netip.Prefix
	if opts.TrustHeader != "" {
		if err := api.ValidHeaderName(opts.TrustHeader); err != nil {
			return fmt.Errorf("--trust-header: %w", err)
		}
		var err error
		if proxies, err = api.ParseTrustedProxies(opts.TrustedProxies); err != nil {
			return fmt.Errorf("--trusted-proxy: %w", err)
		}
	}
	a.words = api.APIWords
	svc, err := a.service(ctx, returns.OpenExisting)
	if err != nil {
		return err
	}
	opts.Announce = a.stdout
	s := api.New(api.Config{
		Service: svc,
		Encode:  func(w io.Writer, v any) error { return writeJSON(w, v) },
		Log:     slog.New(slog.NewJSONHandler(a.stderr, nil)),
		Now:     a.clock(time.Now),

		TrustHeader:    opts.TrustHeader,
		TrustedProxies: proxies,
	})
	a.serving = true
	err = s.Run(ctx, opts.RunOptions)
	if errors.Is(err, syscall.EADDRINUSE) {
		// Still a failure (exit 1); the hint says how to pick another.
		return &returns.Error{Message: err.Error(), Hint: returns.Hint{Before: fmt.Sprintf(
			"another program listens on %s; give serve another address with --addr (127.0.0.1:0 takes any free port and prints it)", opts.Addr)}}
	}
	return err
}
