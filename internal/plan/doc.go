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

// Package plan holds the rules of an UpgradePlan, the part of a
// TalosUpgradePolicy and a TalosUpgrade that says what to install and how
// carefully, and of a ClusterHealthCheck, in one place for their callers:
// the admission webhooks in package webhooks, which refuse an unsafe plan or
// check when it is applied, and the controllers, which check again what a
// bypassed or down webhook may have let through or what changed since.
//
// Validate checks what the plan alone decides (versions, images, pace,
// hooks, windows), ValidateTargets the pair of targets a plan ends on, and
// ValidatePolicy all a TalosUpgradePolicy decides without its Clusters, for
// its webhook and for the policy controller's Ready condition;
// ValidateForCluster checks the plan against a Cluster and
// its Machines, which the TalosUpgrade controller's preflight does again,
// with the version rules of package talos (which versions may be installed
// over which, which Kubernetes versions a Talos version supports).
// ValidateClusterHealthCheck checks a health check, for its webhook and for
// the ClusterHealthCheck controller's Ready condition. The Job templates of
// checks and hooks follow one rule, ValidateJobTemplate's: the Job passes only
// when its one Pod's containers exit 0, so a template that could complete
// without its container deciding (completions 0, several Pods, a success
// policy, failures ignored, another controller, ...) is refused. Warnings and
// ClusterWarnings list what is allowed but deserves a second look; Default
// fills in unset fields.
package plan
