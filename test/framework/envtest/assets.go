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
	"errors"
	"fmt"
	"os"
	"testing"
)

// This file is the one behaviour of every test when the envtest binaries
// (kube-apiserver, etcd, kube-controller-manager, CAPI's core manager) are
// not there: a test that needs them is skipped, saying so and how to get
// them; a test that needs none runs. `make test` always has them
// (hack/envtest-assets.sh builds them); `make test-unit` runs without.

// ErrNoAssets is returned by everything that starts a control plane when
// KUBEBUILDER_ASSETS is not set.
var ErrNoAssets = errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, or export KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)")

// AssetsAvailable reports whether the envtest binaries are set.
func AssetsAvailable() bool {
	return os.Getenv("KUBEBUILDER_ASSETS") != ""
}

// SkipWithoutAssets skips tb when the envtest binaries are not set.
func SkipWithoutAssets(tb testing.TB) {
	tb.Helper()
	if !AssetsAvailable() {
		tb.Skip("this test needs the envtest binaries: " + ErrNoAssets.Error())
	}
}

// ExitWithoutAssets ends the test binary of a suite whose every test needs
// the envtest binaries, from its TestMain, when they are not set: it says
// that suite's tests are skipped and why, and exits 0 before the suite's
// world is started. It returns when the binaries are set.
func ExitWithoutAssets(suite string) {
	if AssetsAvailable() {
		return
	}
	fmt.Printf("Skipping the %s: it needs the envtest binaries: %v\n", suite, ErrNoAssets)
	os.Exit(0)
}

// NoteWithoutAssets says, from the TestMain of a suite whose tests that need
// the envtest binaries skip themselves, that they will, and reports whether
// the binaries are missing.
func NoteWithoutAssets(what string) bool {
	if AssetsAvailable() {
		return false
	}
	fmt.Printf("Skipping %s: %v\n", what, ErrNoAssets)
	return true
}
