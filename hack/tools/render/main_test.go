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
)

func TestSplitImage(t *testing.T) {
	for _, tc := range []struct {
		image, name, tag, digest string
		wantErr                  bool
	}{
		{image: "ghcr.io/tollgate-dev/tollgate-controller:v0.1.0", name: "ghcr.io/tollgate-dev/tollgate-controller", tag: "v0.1.0"},
		{image: "registry:5000/tollgate:dev", name: "registry:5000/tollgate", tag: "dev"},
		{image: "registry:5000/tollgate@sha256:0123", name: "registry:5000/tollgate", digest: "sha256:0123"},
		{image: "tollgate:v1@sha256:0123", name: "tollgate", tag: "v1", digest: "sha256:0123"},
		{image: "registry:5000/tollgate", wantErr: true},
		{image: ":v1", wantErr: true},
	} {
		t.Run(tc.image, func(t *testing.T) {
			name, tag, digest, err := splitImage(tc.image)
			if (err != nil) != tc.wantErr {
				t.Fatalf("splitImage(%q) error = %v, want error %v", tc.image, err, tc.wantErr)
			}
			if !tc.wantErr && (name != tc.name || tag != tc.tag || digest != tc.digest) {
				t.Errorf("splitImage(%q) = %q, %q, %q; want %q, %q, %q", tc.image, name, tag, digest, tc.name, tc.tag, tc.digest)
			}
		})
	}
}

func TestRenderSetsTheImage(t *testing.T) {
	const image = "registry.example.com/tollgate:v9.9.9"
	out, err := render("../../../config/default", image)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(out), "image: "+image+"\n"); got != 1 {
		t.Errorf("the rendered manifests run %s %d times, want once", image, got)
	}
	if strings.Contains(string(out), managerImage+":") {
		t.Errorf("the rendered manifests still run %s", managerImage)
	}
}
