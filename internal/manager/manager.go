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

// Package manager is the former home of the composition root, which moved
// to cmd/manager beside main.go. It forwards to it only for the importers
// that still name this path, and goes once they name cmd/manager.
//
// Deprecated: import github.com/tollgate-dev/tollgate/cmd/manager.
package manager

import (
	"github.com/tollgate-dev/tollgate/cmd/manager"
)

// Options configures the manager; see cmd/manager.Options.
//
// Deprecated: use cmd/manager.Options.
type Options = manager.Options

// New builds the manager; see cmd/manager.New.
//
// Deprecated: use cmd/manager.New.
var New = manager.New
