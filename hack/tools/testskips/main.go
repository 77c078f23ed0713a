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

// Command testskips lists every test that test2json event files (go test
// -json, gotestsum --jsonfile) report as skipped, one line each: its name,
// its package and the message it gave t.Skip, so that a skip is never
// silent. hack/test.sh writes its output after the summary line.
//
//	go run ./hack/tools/testskips out/test.json out/fuzz-*.json
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		_, _ = fmt.Fprintf(os.Stderr, "Usage: %s EVENTS_FILE...\n", os.Args[0])
		os.Exit(2)
	}
	var skips []skip
	for _, name := range os.Args[1:] {
		s, err := readFile(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testskips: %v\n", err)
			os.Exit(1)
		}
		skips = append(skips, s...)
	}
	for _, s := range skips {
		fmt.Println(s)
	}
}

// skip is a skipped test.
type skip struct {
	// pkg is the import path of the test's package.
	pkg string
	// test is the test's name, with its subtests.
	test string
	// message is what the test logged last before it was skipped (the
	// message of t.Skip, with the file and line test2json reports); empty
	// when it logged nothing.
	message string
}

func (s skip) String() string {
	if s.message == "" {
		return fmt.Sprintf("skipped: %s (%s): no message", s.test, s.pkg)
	}
	return fmt.Sprintf("skipped: %s (%s): %s", s.test, s.pkg, s.message)
}

// event is the part of a test2json event that testskips reads.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// logLine is the first line of an entry of t.Log, t.Skip or t.Error in a
// test's output: "    file_test.go:12: message"; the lines that follow it
// until the next entry are its continuation.
var logLine = regexp.MustCompile(`^\s+[^\s:]+\.go:\d+: `)

func readFile(name string) ([]skip, error) {
	f, err := os.Open(name) //nolint:gosec // G304: the files to read are the command's arguments.
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	skips, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return skips, nil
}

// read returns the skipped tests of a stream of test2json events, in the
// order they were skipped. A line that is not an event (a build error that
// gotestsum kept) is ignored.
func read(r io.Reader) ([]skip, error) {
	// last holds, per package and test, the lines of its last log entry.
	last := map[[2]string][]string{}
	var skips []skip
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" {
			continue
		}
		key := [2]string{e.Package, e.Test}
		switch e.Action {
		case "output":
			line := strings.TrimRight(e.Output, "\n")
			switch trimmed := strings.TrimSpace(line); {
			case logLine.MatchString(line):
				last[key] = []string{trimmed}
			case isFraming(trimmed):
			case len(last[key]) > 0 && trimmed != "":
				last[key] = append(last[key], trimmed)
			}
		case "skip":
			skips = append(skips, skip{pkg: e.Package, test: e.Test, message: strings.Join(last[key], " ")})
			delete(last, key)
		case "pass", "fail":
			delete(last, key)
		}
	}
	return skips, sc.Err()
}

// isFraming reports whether a line of output is one the testing package
// writes around a test's own (=== RUN, --- SKIP, ...).
func isFraming(line string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- FAIL", "--- SKIP"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}
