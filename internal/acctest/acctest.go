// Package acctest holds what the provider's acceptance tests share: the
// provider factories, the provider block for the test cluster, and checks
// against live objects (never only against Terraform state).
package acctest

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/provider"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// Factories serve the provider in-process to the terraform CLI under test.
var Factories = map[string]func() (tfprotov6.ProviderServer, error){
	"aiplatform": providerserver.NewProtocol6WithError(provider.New("test")()),
}

// Env returns the package's test cluster, skipping the test when acceptance
// tests are off.
func Env(t *testing.T) *testenv.Env {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 (make test does)")
	}
	// Serve the in-process provider as aiplatform/aiplatform, the address
	// of `source = "aiplatform/aiplatform"`.
	t.Setenv("TF_ACC_PROVIDER_NAMESPACE", "aiplatform")
	if os.Getenv("TF_ACC_OPENTOFU") != "" {
		useOpenTofu(t)
	}
	env := testenv.Current()
	if env == nil {
		t.Fatal("TF_ACC is set but no test cluster is running: the package's TestMain must call testenv.Main")
	}
	return env
}

// RequiredProviders names the provider by its registry address, as users'
// configurations do (the tests serve it in-process under that address).
const RequiredProviders = `terraform {
  required_providers {
    aiplatform = { source = "aiplatform/aiplatform" }
  }
}
`

// Provider is the terraform and provider blocks for the test cluster, with
// extra provider attributes.
func Provider(env *testenv.Env, extra ...string) string {
	s := RequiredProviders + fmt.Sprintf("provider \"aiplatform\" {\n  config_path = %q\n", env.Kubeconfig)
	for _, e := range extra {
		s += "  " + e + "\n"
	}
	return s + "}\n"
}

// Object addresses one live object.
type Object struct {
	GVR       schema.GroupVersionResource
	Namespace string
	Name      string
}

// NewObject addresses a live object by group, version, resource (plural),
// namespace ("" for a cluster-scoped one) and name.
func NewObject(group, version, resource, namespace, name string) Object {
	return Object{GVR: schema.GroupVersionResource{Group: group, Version: version, Resource: resource}, Namespace: namespace, Name: name}
}

func (o Object) client(env *testenv.Env) dynamic.ResourceInterface {
	ri := env.Dynamic.Resource(o.GVR)
	if o.Namespace != "" {
		return ri.Namespace(o.Namespace)
	}
	return ri
}

// Get returns the live object or nil when it does not exist.
func (o Object) Get(env *testenv.Env) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obj, err := o.client(env).Get(ctx, o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// Check asserts on the live object.
func (o Object) Check(env *testenv.Env, check func(obj map[string]any) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		obj, err := o.Get(env)
		if err != nil {
			return err
		}
		if obj == nil {
			return fmt.Errorf("%s %s/%s does not exist in the cluster", o.GVR.Resource, o.Namespace, o.Name)
		}
		return check(obj.Object)
	}
}

// Equal checks that the live field at path equals want (compared as printed).
func (o Object) Equal(env *testenv.Env, want any, path ...string) resource.TestCheckFunc {
	return o.Check(env, func(obj map[string]any) error {
		got, found := lookup(obj, path)
		if want == nil {
			if found {
				return fmt.Errorf("%s: %v: want absent, got %v", o.Name, path, got)
			}
			return nil
		}
		if !found || fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%s: %v: want %v, got %v (found=%v)", o.Name, path, want, got, found)
		}
		return nil
	})
}

// Gone checks that the object no longer exists.
func (o Object) Gone(env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		obj, err := o.Get(env)
		if err != nil {
			return err
		}
		if obj != nil {
			return fmt.Errorf("%s %s still exists", o.GVR.Resource, o.Name)
		}
		return nil
	}
}

// Delete removes the object out of band, as a person with kubectl would, and
// waits until it is gone.
func (o Object) Delete(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := o.client(env).Delete(ctx, o.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting %s out of band: %v", o.Name, err)
	}
	for ctx.Err() == nil {
		if obj, err := o.Get(env); err == nil && obj == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s was not deleted", o.Name)
}

// Edit changes the live object out of band with an ordinary update (as
// `kubectl edit` would), under the given field manager.
func (o Object) Edit(t *testing.T, env *testenv.Env, manager string, edit func(obj map[string]any)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obj, err := o.client(env).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading %s: %v", o.Name, err)
	}
	edit(obj.Object)
	if _, err := o.client(env).Update(ctx, obj, metav1.UpdateOptions{FieldManager: manager}); err != nil {
		t.Fatalf("editing %s out of band: %v", o.Name, err)
	}
}

// lookup walks maps by key and lists by decimal index.
func lookup(obj any, path []string) (any, bool) {
	cur := obj
	for _, k := range path {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[k]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// ErrorMatching matches an error that contains the parts in order, however
// Terraform wrapped the lines: each part is literal text in which any run of
// spaces may also be a line break.
func ErrorMatching(parts ...string) *regexp.Regexp {
	quoted := make([]string, len(parts))
	for i, p := range parts {
		words := strings.Fields(p)
		for j, w := range words {
			words[j] = regexp.QuoteMeta(w)
		}
		quoted[i] = strings.Join(words, `\s+`)
	}
	return regexp.MustCompile(`(?s)` + strings.Join(quoted, ".*"))
}
