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

package envtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Webhooks are webhook configurations installed in a management control
// plane that call a webhook server of the test process: the test providers'
// (test/providers), as their real counterparts' webhooks run in their own
// managers. Build the manager that registers the webhooks with
// webhook.NewServer(w.ServerOptions()).
type Webhooks struct {
	install crenvtest.WebhookInstallOptions
}

// ServeWebhooks installs the webhook configurations of the manifests in
// dirs (a provider's config/webhook, as controller-gen writes it), pointed
// at a free port of the loopback interface and a certificate the apiserver
// trusts. Each configuration is named after its provider (the directory two
// levels up), so that providers' and Tollgate's configurations, all named
// validating-webhook-configuration by controller-gen, do not collide. Call
// Cleanup when the server stopped.
func (m *Management) ServeWebhooks(dirs ...string) (*Webhooks, error) {
	w := &Webhooks{install: crenvtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}}
	for _, dir := range dirs {
		provider := filepath.Base(filepath.Dir(filepath.Dir(dir)))
		path := filepath.Join(dir, "manifests.yaml")
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the webhook manifests of %s: %w", provider, err)
		}
		objs, err := utilyaml.ToUnstructured(data)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", path, err)
		}
		for _, u := range objs {
			u.SetName(provider + "-" + u.GetName())
			switch u.GetKind() {
			case "MutatingWebhookConfiguration":
				hook := &admissionv1.MutatingWebhookConfiguration{}
				if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hook); err != nil {
					return nil, fmt.Errorf("parsing %s %s of %s: %w", u.GetKind(), u.GetName(), path, err)
				}
				w.install.MutatingWebhooks = append(w.install.MutatingWebhooks, hook)
			case "ValidatingWebhookConfiguration":
				hook := &admissionv1.ValidatingWebhookConfiguration{}
				if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hook); err != nil {
					return nil, fmt.Errorf("parsing %s %s of %s: %w", u.GetKind(), u.GetName(), path, err)
				}
				w.install.ValidatingWebhooks = append(w.install.ValidatingWebhooks, hook)
			}
		}
	}
	if err := w.install.Install(m.Config); err != nil {
		_ = w.install.Cleanup()
		return nil, fmt.Errorf("installing the webhook configurations of %v: %w", dirs, err)
	}
	return w, nil
}

// ServerOptions are the options of the webhook server that serves w.
func (w *Webhooks) ServerOptions() webhook.Options {
	return webhook.Options{Host: w.install.LocalServingHost, Port: w.install.LocalServingPort, CertDir: w.install.LocalServingCertDir}
}

// Cleanup removes the serving certificates. The configurations stay: the
// control plane stops next.
func (w *Webhooks) Cleanup() error {
	if w == nil {
		return nil
	}
	return w.install.Cleanup()
}

// WaitForWebhookServer waits, at most a minute, until srv (a manager's
// webhook server, started) serves: until then the apiserver refuses every
// object whose webhook fails closed.
func WaitForWebhookServer(ctx context.Context, srv webhook.Server) error {
	check := srv.StartedChecker()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return check(nil) == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the webhook server: %w", err)
	}
	return nil
}
