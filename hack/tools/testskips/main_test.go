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

package main

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestRead reads the skips of go test -json events, as go 1.26 writes them.
func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events string
		want   []string
	}{
		{
			name: "the message of t.Skip, not the logs before it, escapes decoded and lines joined",
			events: `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: hello\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:4: Skipping \u003cx\u003e \u0026 \"y\": absent\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"        second line\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.005s\n"}
{"Action":"pass","Package":"p","Elapsed":0.006}`,
			want: []string{`skipped: TestA (p): a_test.go:4: Skipping <x> & "y": absent second line`},
		},
		{
			name: "subtests and interleaved parallel tests each keep their own message",
			events: `{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestB/one"}
{"Action":"output","Package":"p","Test":"TestB/one","Output":"=== RUN   TestB/one\n"}
{"Action":"output","Package":"p","Test":"TestB/one","Output":"=== PAUSE TestB/one\n"}
{"Action":"run","Package":"p","Test":"TestB/two"}
{"Action":"output","Package":"p","Test":"TestB/two","Output":"=== CONT  TestB/two\n"}
{"Action":"output","Package":"p","Test":"TestB/two","Output":"    b_test.go:9: two skipped\n"}
{"Action":"output","Package":"p","Test":"TestB/one","Output":"    b_test.go:8: one skipped\n"}
{"Action":"output","Package":"p","Test":"TestB/two","Output":"    --- SKIP: TestB/two (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestB/two","Elapsed":0}
{"Action":"output","Package":"p","Test":"TestB/one","Output":"    --- SKIP: TestB/one (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestB/one","Elapsed":0}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- PASS: TestB (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestB","Elapsed":0}`,
			want: []string{
				"skipped: TestB/two (p): b_test.go:9: two skipped",
				"skipped: TestB/one (p): b_test.go:8: one skipped",
			},
		},
		{
			name: "a skip without a message says so; passed and failed tests are not listed",
			events: `{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: logged\n"}
{"Action":"pass","Package":"p","Test":"TestC","Elapsed":0}
{"Action":"output","Package":"p","Test":"TestD","Output":"    d_test.go:3: broken\n"}
{"Action":"fail","Package":"p","Test":"TestD","Elapsed":0}
# p [build failed]
{"Action":"output","Package":"p","Test":"TestE","Output":"=== RUN   TestE\n"}
{"Action":"output","Package":"p","Test":"TestE","Output":"--- SKIP: TestE (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestE","Elapsed":0}
{"Action":"skip","Package":"q","Elapsed":0}`,
			want: []string{"skipped: TestE (p): no message"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			skips, err := read(strings.NewReader(tc.events))
			g.Expect(err).NotTo(HaveOccurred())
			got := []string{}
			for _, s := range skips {
				got = append(got, s.String())
			}
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
