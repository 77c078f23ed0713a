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

package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/controller-runtime/pkg/client"

	upgradev1 "github.com/tollgate-dev/tollgate/api/v1alpha1"
)

// CASecretKey is the key of the CA bundle in a check's tls.caSecretName.
const CASecretKey = "ca.crt"

// maxRedirects is how many redirects within one host a request follows.
const maxRedirects = 10

var errRedirects = errors.New("stopped after 10 redirects")

// endpoint is where one run of a check sends its requests.
type endpoint struct {
	// url is the URL of the request (http) or of the API (prometheus).
	url *url.URL
	// transport sends the requests, with the check's headers.
	transport http.RoundTripper
	// name says what the endpoint is in failure reasons: the URL, or the
	// Service and its Cluster. It never holds a header.
	name string
	// shared is true when transport is client-go's, shared with other
	// clients of the workload cluster: its idle connections stay open.
	shared bool
}

func (e *endpoint) String() string { return e.name }

// checkRedirect follows redirects within the host of the first request
// only: a check must not be answered by a server it was not pointed at.
func (e *endpoint) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return errRedirects
	}
	if first := via[0].URL; req.URL.Host != first.Host || req.URL.Scheme != first.Scheme {
		return http.ErrUseLastResponse
	}
	return nil
}

// close releases the connections of a transport of its own.
func (e *endpoint) close() {
	if t, ok := e.transport.(*headerTransport); ok && !e.shared {
		if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}

// resolve returns the endpoint of e for a check of namespace in the Cluster
// clusterName.
func (p *Prober) resolve(ctx context.Context, namespace, clusterName string, e *upgradev1.HealthCheckEndpoint) (*endpoint, error) {
	return p.resolveIn(ctx, namespace, namespace, clusterName, e)
}

// resolveIn returns the endpoint of e whose Secrets are in secretNamespace,
// a service being reached through the apiserver of the Cluster
// clusterNamespace/clusterName.
func (p *Prober) resolveIn(ctx context.Context, secretNamespace, clusterNamespace, clusterName string, e *upgradev1.HealthCheckEndpoint) (*endpoint, error) {
	headers, err := p.headers(ctx, secretNamespace, e.HeadersSecretName)
	if err != nil {
		return nil, err
	}
	if e.Service != nil {
		return p.serviceEndpoint(ctx, clusterNamespace, clusterName, e.Service, headers)
	}
	u, err := url.Parse(e.URL)
	if err != nil {
		return nil, fmt.Errorf("url %q: %w", e.URL, err)
	}
	base, err := p.urlTransport(ctx, secretNamespace, e.TLS)
	if err != nil {
		return nil, err
	}
	shown := *u
	shown.RawQuery, shown.Fragment = "", ""
	return &endpoint{url: u, transport: &headerTransport{base: base, headers: headers}, name: shown.String()}, nil
}

// serviceEndpoint returns the endpoint of a Service of the workload
// cluster: its path under the workload apiserver's Service proxy, reached
// with the Cluster's kubeconfig.
func (p *Prober) serviceEndpoint(ctx context.Context, namespace, clusterName string, s *upgradev1.HealthCheckService, headers http.Header) (*endpoint, error) {
	data, err := kubeconfig.FromSecret(ctx, p.Client, client.ObjectKey{Namespace: namespace, Name: clusterName})
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig of Cluster %q: %w", clusterName, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("parsing the kubeconfig of Cluster %q: %w", clusterName, err)
	}
	base, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a transport to the apiserver of Cluster %q: %w", clusterName, err)
	}
	server, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the apiserver of Cluster %q: %w", clusterName, err)
	}
	scheme := s.Scheme
	if scheme == "" {
		scheme = "http"
	}
	u := server.JoinPath("api", "v1", "namespaces", s.Namespace, "services", scheme+":"+s.Name+":"+s.Port.String(), "proxy")
	if s.Path != "" {
		rel, err := url.Parse(s.Path)
		if err != nil {
			return nil, fmt.Errorf("service path %q: %w", s.Path, err)
		}
		u.Path += "/" + strings.TrimPrefix(rel.Path, "/")
		u.RawPath = ""
		u.RawQuery = rel.RawQuery
	}
	return &endpoint{
		url:       u,
		transport: &headerTransport{base: base, headers: headers},
		name:      fmt.Sprintf("Service %s/%s port %s of Cluster %q", s.Namespace, s.Name, s.Port.String(), clusterName),
		shared:    true,
	}, nil
}

// urlTransport returns a transport of its own to a URL, verifying TLS as
// t says: the system's roots (or those of the CA Secret) unless
// insecureSkipVerify.
func (p *Prober) urlTransport(ctx context.Context, namespace string, t *upgradev1.HealthCheckTLS) (http.RoundTripper, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	if p.Transport != nil {
		base = p.Transport.Clone()
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if base.TLSClientConfig != nil {
		cfg = base.TLSClientConfig.Clone()
	}
	if t != nil {
		cfg.InsecureSkipVerify = t.InsecureSkipVerify //nolint:gosec // The user's choice, documented as for tests only.
		if t.CASecretName != "" {
			secret, err := p.secret(ctx, namespace, t.CASecretName)
			if err != nil {
				return nil, err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(secret.Data[CASecretKey]) {
				return nil, fmt.Errorf("secret %q has no PEM certificate in its key %s", t.CASecretName, CASecretKey)
			}
			cfg.RootCAs = pool
		}
	}
	base.TLSClientConfig = cfg
	return base, nil
}

// headers returns the headers of the Secret name: each key a header, each
// value its value, trimmed.
func (p *Prober) headers(ctx context.Context, namespace, name string) (http.Header, error) {
	h := http.Header{}
	if name == "" {
		return h, nil
	}
	secret, err := p.secret(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	for k, v := range secret.Data {
		h.Set(k, strings.TrimSpace(string(v)))
	}
	return h, nil
}

func (p *Prober) secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := p.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return nil, fmt.Errorf("reading Secret %q: %w", name, err)
	}
	return secret, nil
}

// headerTransport adds the check's headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, vs := range t.headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = vs[0]
			continue
		}
		req.Header[k] = vs
	}
	return t.base.RoundTrip(req)
}
