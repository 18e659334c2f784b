package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Versions of the components. Those built in tools/ must match the versions
// required by tools/go.mod (TestToolsVersions checks it); the others are built
// from their own modules (see EnsureBinaries). Binaries are cached by these names.
const (
	KubernetesVersion = "v1.36.3"
	EtcdVersion       = "v3.6.16"
	KwokVersion       = "v0.8.0"
	KueueVersion      = "v0.17.0"
	KubeRayVersion    = "v1.5.0" // github.com/ray-project/kuberay/ray-operator
	LWSVersion        = "v0.7.0" // sigs.k8s.io/lws
)

// ProviderModule is the module path of this repository's root go.mod.
const ProviderModule = "github.com/aiplatform/terraform-provider-aiplatform"

// RepoRoot returns the root of the provider repository: $TESTENV_REPO when set,
// else the nearest directory at or above the working directory whose go.mod
// declares ProviderModule.
func RepoRoot() (string, error) {
	if dir := os.Getenv("TESTENV_REPO"); dir != "" {
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if modulePath(filepath.Join(dir, "go.mod")) == ProviderModule {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("testenv: no go.mod declaring module %s at or above %s (set TESTENV_REPO)", ProviderModule, wd)
		}
	}
}

// modulePath returns the module line of a go.mod file, "" if there is none.
func modulePath(goMod string) string {
	f, err := os.Open(goMod)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// BinDir is where built binaries are cached:
// ${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-aiplatform/bin.
func BinDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", errors.New("testenv: no cache directory: set XDG_CACHE_HOME or HOME")
	}
	return filepath.Join(cache, "terraform-provider-aiplatform", "bin"), nil
}
