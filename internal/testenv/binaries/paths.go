package binaries

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// Dir is where built binaries are cached:
// ${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-aiplatform/bin.
func Dir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", errors.New("testenv: no cache directory: set XDG_CACHE_HOME or HOME")
	}
	return filepath.Join(cache, "terraform-provider-aiplatform", "bin"), nil
}

var moduleDirs sync.Map // "path@version" → directory

// ModuleDir returns the directory of a module version in the Go module cache,
// downloading it through the module proxy if needed (`go mod download -json`).
func ModuleDir(ctx context.Context, modulePath, version string) (string, error) {
	key := modulePath + "@" + version
	if dir, ok := moduleDirs.Load(key); ok {
		return dir.(string), nil
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", key)
	// Outside any module, so neither this repository's go.mod nor a go.work
	// has a say.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(out, &info); jsonErr != nil || info.Dir == "" {
		return "", fmt.Errorf("testenv: go mod download %s: %v %s %s", key, err, info.Error, strings.TrimSpace(stderr.String()))
	}
	moduleDirs.Store(key, info.Dir)
	return info.Dir, nil
}
