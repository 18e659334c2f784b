package provider

import (
	"context"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func nullModel() providerModel {
	return providerModel{ConfigPaths: types.ListNull(types.StringType), Exec: types.ObjectNull(execAttrTypes)}
}

// Attributes win over variables, KUBE_CONFIG_PATH over KUBE_CONFIG_PATHS, as
// in hashicorp/kubernetes.
func TestConfigPathPrecedence(t *testing.T) {
	t.Setenv("KUBE_CONFIG_PATH", "/env/one")
	t.Setenv("KUBE_CONFIG_PATHS", "/env/a:/env/b")
	p := &aiplatform{version: "1.2.3"}
	ctx := context.Background()

	cfg, _ := p.kubeConfig(ctx, nullModel(), "1.11.4")
	if cfg.ConfigPath != "/env/one" || cfg.ConfigPaths != nil {
		t.Fatalf("both variables: path=%q paths=%v, want KUBE_CONFIG_PATH alone", cfg.ConfigPath, cfg.ConfigPaths)
	}
	if cfg.UserAgent != "terraform-provider-aiplatform/1.2.3 Terraform/1.11.4" {
		t.Fatalf("user agent = %q", cfg.UserAgent)
	}

	t.Setenv("KUBE_CONFIG_PATH", "")
	cfg, _ = p.kubeConfig(ctx, nullModel(), "")
	if cfg.ConfigPath != "" || !reflect.DeepEqual(cfg.ConfigPaths, []string{"/env/a", "/env/b"}) {
		t.Fatalf("KUBE_CONFIG_PATHS: path=%q paths=%v", cfg.ConfigPath, cfg.ConfigPaths)
	}

	t.Setenv("KUBE_CONFIG_PATH", "/env/one")
	m := nullModel()
	m.ConfigPaths = types.ListValueMust(types.StringType, []attr.Value{types.StringValue("/attr/x")})
	cfg, _ = p.kubeConfig(ctx, m, "")
	if cfg.ConfigPath != "" || !reflect.DeepEqual(cfg.ConfigPaths, []string{"/attr/x"}) {
		t.Fatalf("config_paths attribute: path=%q paths=%v, want the attribute alone", cfg.ConfigPath, cfg.ConfigPaths)
	}

	m = nullModel()
	m.ConfigPath = types.StringValue("/attr/one")
	cfg, _ = p.kubeConfig(ctx, m, "")
	if cfg.ConfigPath != "/attr/one" || cfg.ConfigPaths != nil {
		t.Fatalf("config_path attribute: path=%q paths=%v", cfg.ConfigPath, cfg.ConfigPaths)
	}
}
