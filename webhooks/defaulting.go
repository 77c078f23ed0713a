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

package webhooks

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// registerDefaulter registers the defaulting webhook of obj's kind, served
// by defaulter, at the path controller-runtime's builder gives it (the path
// of the kind's +kubebuilder:webhook marker), as a schemaFirst webhook.
func registerDefaulter[T runtime.Object](mgr ctrl.Manager, obj T, defaulter admission.Defaulter[T]) error {
	gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
	if err != nil {
		return fmt.Errorf("registering the defaulting webhook of %T: %w", obj, err)
	}
	path := "/mutate-" + strings.ReplaceAll(gvk.Group, ".", "-") + "-" + gvk.Version + "-" + strings.ToLower(gvk.Kind)
	mgr.GetWebhookServer().Register(path, defaultingWebhook(mgr.GetScheme(), defaulter))
	return nil
}

// defaultingWebhook returns the defaulting webhook of defaulter, which lets
// a request whose object does not decode into its Go type through
// unchanged. The apiserver runs the mutating webhooks before its schema
// validation, so a decoding error would refuse such an object first, with a
// message that names no field and says nothing of what to write (`parsing
// time "168h" as "2006-01-02T15:04:05Z07:00"` for a time field holding a
// duration); let through, it meets the schema, whose rules name the field
// and say what to write. The validating webhooks, which run after the
// schema, still refuse whatever gets past it and does not decode.
func defaultingWebhook[T runtime.Object](scheme *runtime.Scheme, defaulter admission.Defaulter[T]) *admission.Webhook {
	wh := admission.WithDefaulter(scheme, defaulter)
	wh.Handler = &schemaFirst[T]{decoder: admission.NewDecoder(scheme), defaulting: wh.Handler}
	return wh
}

// schemaFirst admits unchanged what does not decode into T, and hands
// everything else to the defaulting handler.
type schemaFirst[T runtime.Object] struct {
	decoder    admission.Decoder
	defaulting admission.Handler
}

// Handle answers an admission request.
func (h *schemaFirst[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation == admissionv1.Create || req.Operation == admissionv1.Update {
		if err := h.decoder.Decode(req, newObject[T]()); err != nil {
			ctrl.LoggerFrom(ctx).V(4).Info("Admitting an object that does not decode, for the schema to refuse it", "kind", req.Kind.Kind, "name", req.Name, "reason", err.Error())
			return admission.Allowed("")
		}
	}
	return h.defaulting.Handle(ctx, req)
}

// newObject returns a new, empty T.
func newObject[T runtime.Object]() T {
	var zero T
	if t := reflect.TypeOf(zero); t.Kind() == reflect.Pointer {
		return reflect.New(t.Elem()).Interface().(T)
	}
	return zero
}
