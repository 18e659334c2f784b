package training

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// The backup CronJob's script, run with sh against two directories standing
// in for the mounted claims: each run adds a complete timestamped copy, the
// newest BACKUP_RETENTION are kept, and a leftover partial copy (a run that
// was killed) is removed, and lost+found is left alone. A fake `date` gives each run its own stamp.
func TestBackupScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	src, dst, bin := filepath.Join(dir, "src"), filepath.Join(dir, "dst"), filepath.Join(dir, "bin")
	for _, d := range []string{filepath.Join(src, "step-100"), dst, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "step-100", "model.pt"), []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	counter := filepath.Join(dir, "n")
	fakeDate := "#!/bin/sh\nn=$(cat " + counter + " 2>/dev/null || echo 0)\nn=$((n + 1))\necho $n > " + counter + "\nprintf '20261201T0000%02dZ\\n' $n\n"
	if err := os.WriteFile(filepath.Join(bin, "date"), []byte(fakeDate), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".partial-killed", "lost+found"} {
		if err := os.MkdirAll(filepath.Join(dst, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := strings.NewReplacer(BackupRoot, dst, BackupSource, src).Replace(backupScript)
	for i := 0; i < 4; i++ {
		cmd := exec.Command(sh, "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), EnvRetention+"=2")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out)
		}
	}
	entries, err := os.ReadDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if want := []string{"20261201T000003Z", "20261201T000004Z", "lost+found"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("backups = %v, want the newest two %v", names, want)
	}
	b, err := os.ReadFile(filepath.Join(dst, names[1], "step-100", "model.pt"))
	if err != nil || string(b) != "weights" {
		t.Fatalf("copied checkpoint = %q, %v", b, err)
	}
}
