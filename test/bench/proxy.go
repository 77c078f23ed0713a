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

package bench

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// NodeClusterLabel labels the Nodes of a benchmark Cluster with its name; the
// proxy shows a Cluster only the Nodes that carry it.
const NodeClusterLabel = "bench.tollgate.dev/cluster"

// RequestKey identifies a class of API requests.
type RequestKey struct {
	// Target is "management" or "workload".
	Target string
	// Verb is get, list, watch, create, update, patch or delete.
	Verb string
	// Resource is the resource, with its subresource after a slash.
	Resource string
}

// Counts are request counts by class.
type Counts map[RequestKey]int64

// Total returns the number of requests matching the filter (nil for all).
func (c Counts) Total(match func(RequestKey) bool) int64 {
	var n int64
	for k, v := range c {
		if match == nil || match(k) {
			n += v
		}
	}
	return n
}

// Sub returns c - before.
func (c Counts) Sub(before Counts) Counts {
	out := Counts{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Top returns the n largest classes as "target verb resource=count".
func (c Counts) Top(n int) []string {
	keys := make([]RequestKey, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c[keys[i]] > c[keys[j]] })
	var out []string
	for i, k := range keys {
		if i == n {
			break
		}
		out = append(out, fmt.Sprintf("%s %s %s=%d", k.Target, k.Verb, k.Resource, c[k]))
	}
	return out
}

// IsProbe reports whether a request class is the ClusterCache's health
// probe of a workload cluster (GET /), which it makes every 10s for every
// connected Cluster whatever Tollgate does.
func IsProbe(k RequestKey) bool { return k.Resource == "(non-resource)" }

// Workload reports whether a request class goes to a workload cluster and
// is not a health probe.
func Workload(k RequestKey) bool { return k.Target == "workload" && !IsProbe(k) }

// Management reports whether a request class goes to the management cluster.
func Management(k RequestKey) bool { return k.Target == "management" }

// IsLease reports whether a request class is on Leases: the leader
// election's renewals.
func IsLease(k RequestKey) bool { return k.Resource == "leases" }

// IsWrite reports whether a request class changes objects.
func IsWrite(k RequestKey) bool {
	switch k.Verb {
	case "create", "update", "patch", "delete":
		return true
	}
	return false
}

// Proxy is a counting reverse proxy in front of the apiservers, served over
// plain HTTP on the loopback interface.
type Proxy struct {
	listener net.Listener
	server   *http.Server

	mu        sync.Mutex
	upstreams map[string]*httputil.ReverseProxy // by route
	counts    Counts
	// byRoute are the counts of each management route: one per controller
	// process of a sharded fleet.
	byRoute map[string]Counts
	// written are the named objects written through each management
	// route, as "resource namespace/name" (the subresource left out).
	written map[string]map[string]bool
}

// NewProxy starts a proxy with no route.
func NewProxy() (*Proxy, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the API proxy: %w", err)
	}
	p := &Proxy{listener: lis, upstreams: map[string]*httputil.ReverseProxy{}, counts: Counts{}, byRoute: map[string]Counts{}, written: map[string]map[string]bool{}}
	p.server = &http.Server{Handler: p} //nolint:gosec // A loopback test proxy; slowloris is not a concern.
	go func() { _ = p.server.Serve(lis) }()
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() error { return p.server.Close() }

// AddUpstream routes /<route>/... to the apiserver of cfg, with its
// credentials.
func (p *Proxy) AddUpstream(route string, cfg *rest.Config) error {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return fmt.Errorf("parsing the apiserver address %q: %w", cfg.Host, err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return fmt.Errorf("building a transport to %s: %w", cfg.Host, err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     transport,
		FlushInterval: -1, // Watches stream.
	}
	p.mu.Lock()
	p.upstreams[route] = rp
	p.mu.Unlock()
	return nil
}

// ManagementKubeconfig returns a kubeconfig for the management route.
func (p *Proxy) ManagementKubeconfig(route string) ([]byte, error) {
	return p.kubeconfig(fmt.Sprintf("http://%s/%s", p.listener.Addr(), route))
}

// WorkloadKubeconfig returns a kubeconfig for the workload route, seen as
// the Cluster clusterName: Node lists and watches only return its Nodes.
func (p *Proxy) WorkloadKubeconfig(route, clusterName string) ([]byte, error) {
	return p.kubeconfig(fmt.Sprintf("http://%s/%s/c/%s", p.listener.Addr(), route, clusterName))
}

func (p *Proxy) kubeconfig(server string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["bench"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench"}
	cfg.CurrentContext = "bench"
	return clientcmd.Write(*cfg)
}

// Counts returns a copy of the request counts so far.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(Counts, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// RouteCounts returns a copy of the request counts of one management route
// so far.
func (p *Proxy) RouteCounts(route string) Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(Counts, len(p.byRoute[route]))
	for k, v := range p.byRoute[route] {
		out[k] = v
	}
	return out
}

// Written returns the named objects written through a management route so
// far, as "resource namespace/name", sorted.
func (p *Proxy) Written(route string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.written[route]))
	for k := range p.written[route] {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// isManagementRoute reports whether a route leads to the management
// apiserver: managementRoute, or one of a shard's (managementRoute-<shard>).
func isManagementRoute(route string) bool {
	return route == managementRoute || strings.HasPrefix(route, managementRoute+"-")
}

// ServeHTTP routes, filters and counts a request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// /<route>[/c/<cluster>]/<api path>
	trimmed := strings.TrimPrefix(r.URL.Path, "/")
	route, path, _ := strings.Cut(trimmed, "/")
	path = "/" + path
	cluster := ""
	if strings.HasPrefix(path, "/c/") {
		var after string
		cluster, after, _ = strings.Cut(strings.TrimPrefix(path, "/c/"), "/")
		path = "/" + after
	}
	p.mu.Lock()
	upstream, ok := p.upstreams[route]
	target := "workload"
	if isManagementRoute(route) {
		target = "management"
	}
	verb, resource := classify(r.Method, path, r.URL.Query())
	key := RequestKey{Target: target, Verb: verb, Resource: resource}
	p.counts[key]++
	if target == "management" {
		if p.byRoute[route] == nil {
			p.byRoute[route], p.written[route] = Counts{}, map[string]bool{}
		}
		p.byRoute[route][key]++
		if obj := writtenObject(verb, path); obj != "" {
			p.written[route][obj] = true
		}
	}
	p.mu.Unlock()
	if !ok {
		http.Error(w, "no such route", http.StatusNotFound)
		return
	}
	r.URL.Path, r.URL.RawPath = path, ""
	if cluster != "" && r.Method == http.MethodGet && path == "/api/v1/nodes" {
		q := r.URL.Query()
		sel := NodeClusterLabel + "=" + cluster
		if existing := q.Get("labelSelector"); existing != "" {
			sel = existing + "," + sel
		}
		q.Set("labelSelector", sel)
		r.URL.RawQuery = q.Encode()
	}
	upstream.ServeHTTP(w, r)
}

// writtenObject returns "resource namespace/name" (the subresource left
// out) of a write to a named, namespaced object, else "".
func writtenObject(verb, path string) string {
	if !IsWrite(RequestKey{Verb: verb}) {
		return ""
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		return ""
	}
	if len(segs) < 4 || segs[0] != "namespaces" {
		return ""
	}
	return segs[2] + " " + segs[1] + "/" + segs[3]
}

// classify returns the verb and resource of an API request.
func classify(method, path string, query url.Values) (verb, resource string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		segs = nil
	}
	named := false
	switch {
	case len(segs) == 0:
		resource = "(non-resource)"
	case segs[0] == "namespaces" && len(segs) >= 3:
		resource = segs[2]
		named = len(segs) >= 4
		if len(segs) >= 5 {
			resource += "/" + segs[4]
		}
	default:
		resource = segs[0]
		named = len(segs) >= 2
		if len(segs) >= 3 {
			resource += "/" + segs[2]
		}
	}
	switch method {
	case http.MethodGet:
		switch {
		case query.Get("watch") == "true" || query.Get("watch") == "1":
			verb = "watch"
		case named || resource == "(non-resource)":
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = strings.ToLower(method)
	}
	return verb, resource
}
