/*
Copyright 2026 The Tollgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package promserver serves, in-process, the Prometheus HTTP query API
// (/api/v1/query, GET and POST) of Prometheus' own PromQL engine over
// Prometheus' own TSDB, for the tests of prometheus ClusterHealthChecks:
// the checks' client (client_golang's API client) talks to it as to a
// Prometheus. A test writes series with Set, as a scrape or the rule
// manager would, and ends them with Stale, as Prometheus does when a series
// or an alert goes away; the engine sees a sample for its lookback delta
// (5m) unless a staleness marker ends it first.
//
// Only the HTTP framing of the query endpoint is written here, in the shape
// of Prometheus' API ({"status":"success","data":{"resultType":...}} or
// {"status":"error","errorType":...,"error":...}); the results are the
// engine's, encoded by their own JSON marshalers.
package promserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb"
)

// QueryPath is the path of the instant query endpoint.
const QueryPath = "/api/v1/query"

// Server is a Prometheus query API over a TSDB of its own.
type Server struct {
	// URL is the base URL of the API, http://127.0.0.1:<port>.
	URL string
	// Addr is the address it listens on.
	Addr string

	dir    string
	db     *tsdb.DB
	engine *promql.Engine
	srv    *http.Server

	mu      sync.Mutex
	queries []string
	// last is the timestamp of the last sample appended: the next one is
	// later, so that a Set and a Stale in the same millisecond both land.
	last int64
}

// Start opens a TSDB in a temporary directory and serves the query API on
// a loopback port.
func Start() (_ *Server, err error) {
	dir, err := os.MkdirTemp("", "promserver-")
	if err != nil {
		return nil, fmt.Errorf("creating the TSDB directory: %w", err)
	}
	s := &Server{dir: dir}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	logger := slog.New(slog.DiscardHandler)
	if s.db, err = tsdb.Open(dir, logger, nil, tsdb.DefaultOptions(), nil); err != nil {
		return nil, fmt.Errorf("opening the TSDB: %w", err)
	}
	s.engine = promql.NewEngine(promql.EngineOpts{Logger: logger, MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(QueryPath, s.query)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.Addr = l.Addr().String()
	s.URL = "http://" + s.Addr
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// Handler returns the handler of the API, to serve it elsewhere (behind a
// Service of a workload cluster, for example).
func (s *Server) Handler() http.Handler { return s.srv.Handler }

// Close stops the server and removes the TSDB.
func (s *Server) Close() error {
	var errs []error
	if s.srv != nil {
		errs = append(errs, s.srv.Close())
	}
	if s.engine != nil {
		errs = append(errs, s.engine.Close())
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	errs = append(errs, os.RemoveAll(s.dir))
	return errors.Join(errs...)
}

// Set appends a sample of the series lbls (with __name__) at now.
func (s *Server) Set(lbls map[string]string, v float64) error {
	return s.append(lbls, v)
}

// Stale ends the series lbls now with a staleness marker, as Prometheus
// does for a target that went away or an alert that stopped firing.
func (s *Server) Stale(lbls map[string]string) error {
	return s.append(lbls, math.Float64frombits(value.StaleNaN))
}

func (s *Server) append(lbls map[string]string, v float64) error {
	s.mu.Lock()
	ts := max(time.Now().UnixMilli(), s.last+1)
	s.last = ts
	s.mu.Unlock()
	app := s.db.Appender(context.Background())
	if _, err := app.Append(0, labels.FromMap(lbls), ts, v); err != nil {
		_ = app.Rollback()
		return fmt.Errorf("appending to %v: %w", lbls, err)
	}
	if err := app.Commit(); err != nil {
		return fmt.Errorf("appending to %v: %w", lbls, err)
	}
	// A query that follows sees the sample: its time is not in the future.
	for time.Now().UnixMilli() <= ts {
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// Queries returns the queries the server answered, in order.
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}

// query answers an instant query as Prometheus' API does.
func (s *Server) query(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "bad_data", err.Error())
		return
	}
	qs := r.Form.Get("query")
	s.mu.Lock()
	s.queries = append(s.queries, qs)
	s.mu.Unlock()
	ts := time.Now()
	if t := r.Form.Get("time"); t != "" {
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_data", fmt.Sprintf("invalid parameter \"time\": %v", err))
			return
		}
		ts = time.UnixMilli(int64(f * 1000))
	}
	q, err := s.engine.NewInstantQuery(r.Context(), s.db, nil, qs, ts)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_data", err.Error())
		return
	}
	defer q.Close()
	res := q.Exec(r.Context())
	if res.Err != nil {
		writeError(w, http.StatusUnprocessableEntity, "execution", res.Err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "success",
		"data":   map[string]any{"resultType": res.Value.Type(), "result": res.Value},
	})
}

func writeError(w http.ResponseWriter, code int, errorType, msg string) {
	writeJSON(w, code, map[string]any{"status": "error", "errorType": errorType, "error": msg})
}

func writeJSON(w http.ResponseWriter, code int, body any) {
	raw, err := json.Marshal(body)
	if err != nil {
		code, raw = http.StatusInternalServerError, []byte(`{"status":"error","errorType":"internal","error":"encoding the result"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(raw)
}
