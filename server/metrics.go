package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the server's Prometheus metrics (docs/server.md
// "Metrics"), in a registry of their own with the Go and process
// collectors.
type Metrics struct {
	reg        *prometheus.Registry
	decisions  *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	recovery   prometheus.Gauge
	recovered  prometheus.Gauge
	leasesHeld prometheus.Gauge
	longPolls  prometheus.Gauge
	groupSizes prometheus.Histogram
}

// NewMetrics registers the server's metrics in a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "assistant_decisions_total",
			Help: "Answers posted to tasks, by action (approve, cancel, edit, revise; answered for a reason or a plain resume) and outcome (ok, or the error code).",
		}, []string{"action", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "assistant_http_request_duration_seconds",
			Help:    "Time from a request's arrival to its response, by route and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "status"}),
		recovery: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "assistant_recovery_scan_seconds",
			Help: "How long the start-up recovery scan took.",
		}),
		recovered: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "assistant_recovery_scan_tasks",
			Help: "Tasks the start-up recovery scan took over or ended.",
		}),
		leasesHeld: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "assistant_leases_held",
			Help: "Task leases this server holds now (runs of starts, answers and the recovery scan in progress).",
		}),
		longPolls: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "assistant_long_polls",
			Help: "GETs of a task with ?wait= waiting now.",
		}),
		groupSizes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "assistant_group_commit_decisions",
			Help:    "Decisions per group commit: answers that shared one business and one checkpoint commit (1: an answer committed alone).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
		}),
	}
	m.reg.MustRegister(m.decisions, m.latency, m.recovery, m.recovered, m.leasesHeld, m.longPolls, m.groupSizes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
