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

package capi_test

import (
	"fmt"
	"os"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
	"github.com/tollgate-dev/tollgate/test/framework/sandbox"
)

// managements are the tests' management control planes, each with CAPI's,
// Tollgate's and the providers' CRDs (those of a sandbox with
// Options.CAPI): a test has one to itself, started or left by an earlier
// test, and gives it back emptied, with the workload control planes it
// started (envtest.ManagementPool).
var managements *envtest.ManagementPool

// TestMain runs the tests. With CAPI_TEST_LOG set to a directory, the
// controllers of the test process log at verbosity 4, CAPI core runs at
// verbosity 5, and a failed test leaves CAPI core's log in that directory
// as <test>-capi.log: what to read when CAPI does not do what a test waits
// for. The management control planes stop when the tests end.
func TestMain(m *testing.M) {
	envtest.ExitWithoutAssets("CAPI core suite")
	if os.Getenv("CAPI_TEST_LOG") != "" {
		ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(4))))
		klog.SetLogger(ctrl.Log)
	}
	managements = sandbox.NewManagementPool(sandbox.Options{CAPI: true})
	code := m.Run()
	if err := managements.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "Stopping the management control planes: %v\n", err)
		code = 1
	}
	os.Exit(code)
}
