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

// Package redact keeps credentials out of Tollgate's logs. At high
// verbosity (-v=8 and up) client-go logs the body of every API request and
// response, and the bodies of the Secrets Tollgate reads (kubeconfigs,
// talosconfigs, registry credentials) hold private keys. The klog filter of
// this package replaces every such body with its size.
package redact

import (
	"fmt"

	"k8s.io/klog/v2"
)

// bodyMessages are the messages under which client-go logs bodies.
var bodyMessages = map[string]bool{"Request Body": true, "Response Body": true}

// Filter is a klog.LogFilter that redacts request and response bodies.
type Filter struct{}

var _ klog.LogFilter = Filter{}

// Install makes klog, and every logger backed by it, redact bodies.
func Install() {
	klog.SetLogFilter(Filter{})
}

// Filter passes unstructured log lines unchanged: client-go logs bodies as
// structured lines only.
func (Filter) Filter(args []interface{}) []interface{} { return args }

// FilterF passes formatted log lines unchanged.
func (Filter) FilterF(format string, args []interface{}) (string, []interface{}) {
	return format, args
}

// FilterS replaces the "body" value of client-go's body lines with its size.
func (Filter) FilterS(msg string, keysAndValues []interface{}) (string, []interface{}) {
	if !bodyMessages[msg] {
		return msg, keysAndValues
	}
	out := make([]interface{}, len(keysAndValues))
	copy(out, keysAndValues)
	for i := 0; i+1 < len(out); i += 2 {
		if out[i] == "body" {
			out[i+1] = fmt.Sprintf("<redacted: %d bytes>", size(out[i+1]))
		}
	}
	return msg, out
}

func size(v interface{}) int {
	switch b := v.(type) {
	case string:
		return len(b)
	case []byte:
		return len(b)
	default:
		return len(fmt.Sprint(b))
	}
}
