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

// Package talosimage reads which Talos version a machine boots from what
// Cluster API's infrastructure objects say of its image, for every
// infrastructure provider Talos users run.
//
// On clouds and VM platforms the Talos a new node runs is the image its
// InfraMachine names: an AMI ID, a gallery image, a VM template, an Image
// Factory URL, an installer image. Read (and, for a template, ReadTemplate)
// finds that field by the InfraMachine's kind (Kinds: the image fields of
// CAPA, CAPZ, CAPG, CAPV, CAPO, CAPH, CAPM3, CAPMOX, CAPX, and of Tollgate's
// test provider) and reads the version from its value (ParseValue):
//
//   - an installer image whose tag is the version
//     (ghcr.io/siderolabs/installer:v1.13.0,
//     factory.talos.dev/metal-installer/<schematic>:v1.13.0);
//   - an Image Factory disk image URL
//     (https://factory.talos.dev/image/<schematic>/v1.13.0/metal-amd64.raw.zst),
//     or another URL that names Talos and has the version as a path segment
//     (a release download);
//   - a name that carries "talos" and the version after it
//     (talos-v1.13.0-amd64, talos-v1-13-0 where dots are not allowed).
//
// An opaque value (an AMI ID, a Proxmox template's VMID, a UUID) names no
// version: the user says which Talos the template boots in the template's
// own metadata, with the annotation VersionAnnotation
// (upgrade.tollgate.dev/talos-version: v1.13.0). A template is a new object
// for a new image (most providers refuse a change of an existing one), so
// the annotation and the image change together. When both the image and the
// annotation name a version, they must agree.
//
// The package is pure: it reads JSON maps (objects as a client or a hook
// request carries them) and imports no client. Tollgate's in-place update
// extension (internal/inplace) reads what a template change asks with it,
// and so do the templates conditions of a rollout.
package talosimage
