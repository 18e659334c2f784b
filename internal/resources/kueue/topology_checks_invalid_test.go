package kueue_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// Bad input to the Topology, AdmissionCheck and ProvisioningRequestConfig
// resources and to a ClusterQueue's admission checks is refused at plan, with
// the attribute path, and nothing reaches the cluster.
func TestAccTopologyAndChecksInvalid(t *testing.T) {
	env := acctest.Env(t)
	topology := func(levels string) string {
		return `resource "aiplatform_topology" "bad" {
  name   = "bad"
  levels = [` + levels + `]
}`
	}
	check := func(body string) string {
		return `resource "aiplatform_admission_check" "bad" {
  name = "bad"
` + body + `
}`
	}
	prc := func(body string) string {
		return `resource "aiplatform_provisioning_request_config" "bad" {
  name = "bad"
` + body + `
}`
	}
	queue := func(body string) string {
		return `resource "aiplatform_cluster_queue" "bad" {
  name = "bad"
` + body + `
}`
	}
	var seventeen []string
	for i := range 17 {
		seventeen = append(seventeen, `"example.com/l`+string(rune('a'+i))+`"`)
	}
	cases := map[string]struct {
		config string
		err    []string
	}{
		"hostname not last": {topology(`"kubernetes.io/hostname", "example.com/rack"`),
			[]string{"kubernetes.io/hostname must be the last level", "levels[0]: level 1 of 2 is kubernetes.io/hostname"}},
		"no levels":         {topology(``), []string{"levels", "list must contain at least 1 elements and at most 16"}},
		"17 levels":         {topology(strings.Join(seventeen, ", ")), []string{"levels", "list must contain at least 1 elements and at most 16", "got: 17"}},
		"duplicate level":   {topology(`"example.com/rack", "example.com/rack"`), []string{"Duplicate List Value", "levels"}},
		"level not a label": {topology(`"not a label"`), []string{`levels[0]: "not a label" is not`}},
		"empty controller":  {check(`controller_name = ""`), []string{"controller_name", "string length must be between 1 and 253"}},
		"parameters kind with a space": {check(`controller_name = "example.com/x"
  parameters = { api_group = "example.com", kind = "My Kind", name = "p" }`), []string{"parameters.kind", "must start with a letter"}},
		"parameters name not a DNS label": {check(`controller_name = "example.com/x"
  parameters = { api_group = "example.com", kind = "Config", name = "Not_A_Name" }`), []string{`parameters.name: "Not_A_Name" is not`}},
		"provisioning check with MultiKueue parameters": {check(`controller_name = "kueue.x-k8s.io/provisioning-request"
  parameters = { api_group = "kueue.x-k8s.io", kind = "MultiKueueConfig", name = "p" }`),
			[]string{"Parameters of the wrong kind", "parameters: controller kueue.x-k8s.io/provisioning-request reads its parameters from a ProvisioningRequestConfig.kueue.x-k8s.io, not a MultiKueueConfig.kueue.x-k8s.io"}},
		"parameters without name": {check(`controller_name = "example.com/x"
  parameters = { api_group = "example.com", kind = "Config" }`), []string{`attribute "name" is required`}},
		"class name not a DNS subdomain": {prc(`provisioning_class_name = "Check_Capacity"`), []string{"provisioning_class_name", "must be a lowercase DNS subdomain"}},
		"negative retry count": {prc(`provisioning_class_name = "check-capacity.autoscaling.x-k8s.io"
  retry_strategy = { backoff_limit_count = -1 }`), []string{"retry_strategy.backoff_limit_count", "value must be between 0 and 2147483647, got: -1"}},
		"unknown merge policy": {prc(`provisioning_class_name = "c"
  pod_set_merge_policy = "Always"`), []string{"pod_set_merge_policy", `value must be one of`, `got: "Always"`}},
		"duplicate node selector key": {prc(`provisioning_class_name = "c"
  pod_set_updates = { node_selector = [
    { key = "pool", value_from_provisioning_class_detail = "a" },
    { key = "pool", value_from_provisioning_class_detail = "b" },
  ] }`), []string{"Duplicate node selector key", `pod_set_updates.node_selector[1].key: key "pool" is listed twice`}},
		"duplicate managed resource": {prc(`provisioning_class_name = "c"
  managed_resources = ["nvidia.com/gpu", "nvidia.com/gpu"]`), []string{"Duplicate List Value", "managed_resources"}},
		"parameter value too long": {prc(`provisioning_class_name = "c"
  parameters = { long = "` + strings.Repeat("x", 256) + `" }`), []string{"parameters", "string length must be at most 255"}},
		"checks both as names and as rules": {queue(`admission_checks = ["a"]
  admission_checks_strategy = [{ name = "b" }]`), []string{"Invalid Attribute Combination"}},
		"check listed twice in the strategy": {queue(`admission_checks_strategy = [{ name = "a" }, { name = "a", on_flavors = ["h100"] }]`),
			[]string{"AdmissionCheck listed twice", `admission_checks_strategy[1].name: "a" is already admission_checks_strategy[0]`}},
		"empty on_flavors": {queue(`admission_checks_strategy = [{ name = "a", on_flavors = [] }]`),
			[]string{"admission_checks_strategy[0].on_flavors", "list must contain at least 1 elements"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.Factories,
				Steps: []resource.TestStep{{
					Config:      acctest.Provider(env) + c.config,
					PlanOnly:    true,
					ExpectError: acctest.ErrorMatching(c.err...),
				}},
			})
		})
	}
	for _, resource := range []string{"topologies", "admissionchecks", "provisioningrequestconfigs", "clusterqueues"} {
		if obj, err := kueueObject(resource, "", "bad").Get(env); err != nil || obj != nil {
			t.Fatalf("bad input changed the cluster: %s %v %v", resource, obj, err)
		}
	}
}
