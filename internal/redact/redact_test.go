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

package redact

import (
	"bytes"
	"flag"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/klog/v2"
)

// TestBodiesAreRedacted logs a Secret's body the way client-go does at -v=8
// and checks that no byte of it reaches the output.
func TestBodiesAreRedacted(t *testing.T) {
	g := NewWithT(t)
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	g.Expect(fs.Set("v", "10")).To(Succeed())
	g.Expect(fs.Set("logtostderr", "false")).To(Succeed())
	var out bytes.Buffer
	klog.SetOutput(&out)
	defer klog.SetLogFilter(nil)
	Install()

	canary := `{"kind":"Secret","data":{"talosconfig":"Y2FuYXJ5LWtleS1tYXRlcmlhbA=="}}`
	klog.Background().V(8).Info("Response Body", "body", canary)
	klog.Background().V(8).Info("Request Body", "body", []byte(canary))
	klog.Background().V(2).Info("Reconciling", "Machine", "default/cp-0")
	klog.Flush()

	g.Expect(out.String()).NotTo(ContainSubstring("Y2FuYXJ5"))
	g.Expect(out.String()).To(ContainSubstring("<redacted: 71 bytes>"))
	g.Expect(out.String()).To(ContainSubstring(`Machine="default/cp-0"`), "other lines are left alone")
}
