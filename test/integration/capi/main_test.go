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
	"os"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tollgate-dev/tollgate/test/framework/envtest"
)

// TestMain runs the tests. With CAPI_TEST_LOG set to a directory, the
// controllers of the test process log at verbosity 4, CAPI core runs at
// verbosity 5, and a failed test leaves CAPI core's log in that directory
// as <test>-capi.log: what to read when CAPI does not do what a test waits
// for.
func TestMain(m *testing.M) {
	envtest.ExitWithoutAssets("CAPI core suite")
	if os.Getenv("CAPI_TEST_LOG") != "" {
		ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(4))))
		klog.SetLogger(ctrl.Log)
	}
	os.Exit(m.Run())
}
