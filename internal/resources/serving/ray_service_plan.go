package serving

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Plan: checks across attributes (the cluster config's are the RayCluster's
// own), the serve config's shape, and the live checks of ModifyPlan.

func validateRayService(m *rayServiceModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if object.Known(m.Name) {
		name := m.Name.ValueString()
		switch {
		case len(name) > rayServiceMaxName:
			diags.AddAttributeError(tfpath.Root("name"), "Name too long",
				fmt.Sprintf("%q is %d characters; KubeRay names the service's clusters <name>-<5 characters> and refuses a RayService name of more than %d.",
					name, len(name), rayServiceMaxName))
		case name[0] < 'a' || name[0] > 'z' || strings.Contains(name, "."):
			diags.AddAttributeError(tfpath.Root("name"), "Invalid name",
				fmt.Sprintf("%q: KubeRay requires a RayService name to be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter).", name))
		}
	}
	c := m.asCluster()
	c.Name = types.StringUnknown() // the service's own length rule above
	diags.Append(validateRayCluster(c)...)
	if object.Known(m.ServeConfig) {
		if _, err := rayServeApplications(m.ServeConfig.ValueString()); err != nil {
			diags.AddAttributeError(tfpath.Root("serve_config"), "Invalid serve config", err.Error())
		}
	}
	if u := m.UpgradeStrategy; u != nil && object.Known(u.Type) {
		p := tfpath.Root("upgrade_strategy")
		options := map[string]bool{
			"max_surge_percent": !u.MaxSurgePercent.IsNull(), "step_size_percent": !u.StepSizePercent.IsNull(),
			"interval_seconds": !u.IntervalSeconds.IsNull(), "gateway_class_name": !u.GatewayClassName.IsNull(),
		}
		if u.Type.ValueString() != rayUpgradeIncremental {
			for _, k := range []string{"max_surge_percent", "step_size_percent", "interval_seconds", "gateway_class_name"} {
				if options[k] {
					diags.AddAttributeError(p.AtName(k), "Option of another upgrade type",
						fmt.Sprintf("%s applies only to type = %q, not %q.", k, rayUpgradeIncremental, u.Type.ValueString()))
				}
			}
		} else {
			for _, k := range []string{"step_size_percent", "interval_seconds", "gateway_class_name"} {
				if !options[k] {
					diags.AddAttributeError(p.AtName(k), "Missing upgrade option",
						fmt.Sprintf("type = %q needs %s (KubeRay refuses the RayService without it).", rayUpgradeIncremental, k))
				}
			}
			if a := m.Autoscaling; a == nil || (object.Known(a.Enabled) && !a.Enabled.ValueBool()) {
				diags.AddAttributeError(p.AtName("type"), "Incremental upgrade without autoscaling",
					fmt.Sprintf("type = %q scales the new cluster with Ray's autoscaler: set autoscaling = { enabled = true }.", rayUpgradeIncremental))
			}
		}
	}
	if object.Known(m.InitializingTimeout) {
		if err := rayCheckTimeout(m.InitializingTimeout.ValueString()); err != nil {
			diags.AddAttributeError(tfpath.Root("initializing_timeout"), "Invalid initializing timeout", err.Error())
		}
	}
	return diags
}

// rayCheckTimeout accepts what KubeRay v1.5 accepts for the
// ray.io/initializing-timeout annotation: a positive Go duration or a
// positive number of seconds.
func rayCheckTimeout(s string) error {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return fmt.Errorf("%q must be a positive duration", s)
		}
		return nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 {
			return fmt.Errorf("%q must be a positive number of seconds", s)
		}
		return nil
	}
	return fmt.Errorf("%q is neither a duration (\"30m\", \"1h\") nor a number of seconds", s)
}

// rayServeApp is one application of a serve config.
type rayServeApp struct {
	Name, ImportPath string
}

// rayServeApplications parses a serve config (Ray Serve's config file:
// a mapping whose applications list names each application's import_path)
// and returns its applications, with Ray's default name for an unnamed one.
func rayServeApplications(s string) ([]rayServeApp, error) {
	var doc any
	if err := yaml.Unmarshal([]byte(s), &doc); err != nil {
		return nil, fmt.Errorf("not YAML: %v", err)
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be a YAML mapping with an applications list, not %s", rayYAMLKind(doc))
	}
	raw, has := top["applications"]
	if !has {
		return nil, fmt.Errorf("has no applications list (Ray Serve's config file: applications = [{ name, import_path, … }])")
	}
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("applications must be a non-empty list, not %s", rayYAMLKind(raw))
	}
	var apps []rayServeApp
	seen := map[string]int{}
	for i, x := range list {
		a, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("applications[%d] must be a mapping, not %s", i, rayYAMLKind(x))
		}
		path, _ := a["import_path"].(string)
		if strings.TrimSpace(path) == "" {
			return nil, fmt.Errorf("applications[%d] has no import_path (module:attribute of the Serve application, e.g. \"serve_app:app\")", i)
		}
		name, named := a["name"].(string)
		if !named {
			if _, has := a["name"]; has {
				return nil, fmt.Errorf("applications[%d].name must be a string", i)
			}
			if len(list) > 1 {
				return nil, fmt.Errorf("applications[%d] has no name: with several applications each needs one", i)
			}
			name = "default" // Ray Serve's name for the only application
		}
		if j, dup := seen[name]; dup {
			return nil, fmt.Errorf("applications[%d].name %q is also the name of applications[%d]; names must be unique", i, name, j)
		}
		seen[name] = i
		apps = append(apps, rayServeApp{Name: name, ImportPath: path})
	}
	return apps, nil
}

func rayYAMLKind(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	}
	return fmt.Sprintf("a %T", v)
}

// rayApplicationNames is the names of serve_config's applications; null
// when it does not parse, unknown when it is unknown.
func rayApplicationNames(s types.String) types.List {
	if s.IsUnknown() {
		return types.ListUnknown(types.StringType)
	}
	apps, err := rayServeApplications(s.ValueString())
	if err != nil {
		return types.ListNull(types.StringType)
	}
	names := make([]string, len(apps))
	for i, a := range apps {
		names[i] = a.Name
	}
	return object.ListValue(names)
}

// planRayService computes the service's names and checks the worker
// groups' GPUs against the live nodes, as for a RayCluster.
func planRayService(ctx context.Context, c *kube.Client, m *rayServiceModel) diag.Diagnostics {
	cl := m.asCluster()
	diags := planRayCluster(ctx, c, cl)
	if object.Known(m.Name) {
		m.ServeServiceName = types.StringValue(m.Name.ValueString() + "-serve-svc")
		if object.Known(cl.HeadServiceName) {
			m.HeadServiceName, m.DashboardAddress = cl.HeadServiceName, cl.DashboardAddress
		}
	}
	m.ApplicationNames = rayApplicationNames(m.ServeConfig)
	return diags
}
