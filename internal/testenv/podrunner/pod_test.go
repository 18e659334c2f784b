package podrunner

import (
	"os"
	"path/filepath"
	"testing"
)

// A pod's exit is reported with the last lines of its log, long lines cut.
func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pod.log")
	if got := logTail(path, 3, 10); got != "" {
		t.Errorf("missing file: %q", got)
	}
	if err := os.WriteFile(path, []byte("one\ntwo\nthree\nfour is a long line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := logTail(path, 3, 10), "two\nthree\nfour is a …"; got != want {
		t.Errorf("logTail = %q, want %q", got, want)
	}
}
