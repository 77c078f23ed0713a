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

// Package webhooks holds the validating webhooks of the Talos-simulator
// infrastructure provider: those of TalosSimCloudMachine and its template,
// which stand for the cloud providers (CAPA, CAPZ, CAPG, CAPV, CAPO, CAPH)
// and refuse, as their webhooks do, any change of the spec of an existing
// machine (422 Invalid) and of a template. They follow CAPA's
// (kubernetes-sigs/cluster-api-provider-aws, webhooks/awsmachine_webhook.go,
// AWSMachine.ValidateUpdate: the spec is compared without providerID,
// instanceID, additionalTags and a few cloud-init fields, and a difference
// is "spec: Forbidden: cannot be modified"; awsmachinetemplate_webhook.go
// for the template). Cluster API's MachineSet controller writes the desired
// InfraMachine of a Machine it updates in place by server-side apply: with
// these providers an image change cannot be carried in place.
//
// TalosSimMachine, the family of Metal3, Proxmox and Nutanix, has no
// webhook: its image may change, as theirs may.
package webhooks
