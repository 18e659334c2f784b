package acctest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
)

// ShowJSON runs `terraform show -json PLANFILE` in w (show takes neither
// -input nor -var, which Run adds) and returns its standard output.
func (w *Workspace) ShowJSON(planFile string) (string, error) {
	cmd := exec.Command(w.cli.Path, "-chdir="+w.dir, "show", "-no-color", "-json", planFile)
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+w.cliConfig, "TF_IN_AUTOMATION=1")
	cmd.Env = append(cmd.Env, w.Env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("terraform show -json %s: %w\n%s%s", planFile, err, out.String(), errOut.String())
	}
	return out.String(), nil
}
