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

// Package release holds what the release tools (hack/tools/image,
// hack/tools/krew) share: the reproducible build of a static binary, the
// time SOURCE_DATE_EPOCH stamps on what they write, and the empty output
// directory they write into.
package release

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// SourceDateEpoch returns the time of SOURCE_DATE_EPOCH, the Unix epoch when
// it is unset.
func SourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q is not a number of seconds since the Unix epoch", s)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// CheckEmpty fails unless dir does not exist or is an empty directory, so
// that an old release is never mixed with the new one.
func CheckEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--out %q: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("--out %q is not empty: remove it first", dir)
	}
	return nil
}

// Build builds the Go package pkg (relative to dir; dir "" is the current
// directory) as a static, reproducible binary at out for goos/goarch, with
// main.version set to version: CGO_ENABLED=0, -trimpath, no VCS stamp,
// stripped, baseline CPU features. The go tool's output goes to stderr.
func Build(ctx context.Context, dir, pkg, out, goos, goarch, version string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X main.version="+version, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOAMD64=v1", "GOARM64=v8.0")
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for %s/%s: %w", pkg, goos, goarch, err)
	}
	return nil
}
