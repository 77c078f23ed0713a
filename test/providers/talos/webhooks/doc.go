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

// Package webhooks holds the validating webhooks of the stand-in Talos
// bootstrap provider, as strict as the real provider's
// (siderolabs/cluster-api-bootstrap-provider-talos at v0.6.12,
// api/v1alpha3/talosconfig_webhook.go and talosconfigtemplate_webhook.go;
// at v0.7.0-alpha.2 the same in api/v1beta1): the spec of a TalosConfig and
// of a TalosConfigTemplate is immutable, and a change of it is answered 400
// BadRequest ("TalosConfig.Spec is immutable"), not 422. Cluster API's
// MachineSet controller writes the desired TalosConfig of a Machine it
// updates in place by server-side apply before it calls UpdateMachine: with
// the real provider, any change of a TalosConfigTemplate's spec cannot be
// carried in place, and an extension that claims one wedges the
// MachineDeployment.
//
// The TalosControlPlane's webhook (spec.rolloutStrategy.type, defaults) is
// not stood in for: the CRD's own enum and defaults do its part.
//
// Setup registers them with a manager's webhook server; their
// configurations are generated into ../config/webhook (WebhookDirectory),
// for envtest.Management.ServeWebhooks.
package webhooks
