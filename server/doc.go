// Package server is `assistant serve`: the JSON API over the application
// layer (flow/returns), with sign-in by access token, idempotent POSTs,
// an access log and Prometheus metrics (docs/server.md). It is thin:
// each route parses its request, calls the same returns.Service method
// the matching command calls, and renders the same JSON object the
// command prints, through the encoder the caller gives (Config.Encode).
package server
