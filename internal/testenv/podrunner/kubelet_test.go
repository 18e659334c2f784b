package podrunner

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet log endpoint serves a pod's log file as the kubelet would:
// whole, its last tailLines lines, its first limitBytes bytes; 404 for a
// pod the runner did not run and for any other path.
func TestKubeletLogs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "default_fabric-launcher-x.log"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k := &kubeletLogs{dir: dir}
	for _, c := range []struct {
		path string
		code int
		body string
	}{
		{"/containerLogs/default/fabric-launcher-x/launcher", 200, "one\ntwo\nthree\n"},
		{"/containerLogs/default/fabric-launcher-x/launcher?tailLines=2", 200, "two\nthree\n"},
		{"/containerLogs/default/fabric-launcher-x/launcher?limitBytes=5", 200, "one\nt"},
		{"/containerLogs/default/other/launcher", 404, ""},
		{"/containerLogs/default/..%2Fx/launcher", 404, ""},
		{"/containerLogs/../x/launcher", 400, ""},
		{"/exec/default/fabric-launcher-x/launcher", 404, ""},
	} {
		rec := httptest.NewRecorder()
		k.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path, nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != c.code || (c.code == 200 && string(body) != c.body) {
			t.Errorf("GET %s: %d %q, want %d %q", c.path, rec.Code, body, c.code, c.body)
		}
	}
}

// A Command takes only the named container of matching images, and runs
// its command line with the literal env values.
func TestCommandAdapter(t *testing.T) {
	a := Command{Image: regexp.MustCompile(`^ghcr\.io/coreweave/nccl-tests:`), Container: "launcher"}.adapter()
	for _, c := range []struct {
		container corev1.Container
		want      bool
	}{
		{corev1.Container{Name: "launcher", Image: "ghcr.io/coreweave/nccl-tests:12.8"}, true},
		{corev1.Container{Name: "worker", Image: "ghcr.io/coreweave/nccl-tests:12.8"}, false},
		{corev1.Container{Name: "launcher", Image: "mpioperator/mpi-pi:openmpi"}, false},
	} {
		if a.takes(&c.container) != c.want {
			t.Errorf("%s %s: takes %v, want %v", c.container.Name, c.container.Image, !c.want, c.want)
		}
	}
	lp := &localPod{
		runner: &podRunner{logf: t.Logf}, adapter: a, dir: t.TempDir(),
		pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "l"}},
		container: &corev1.Container{Name: "launcher", Command: []string{"cat"}, Args: []string{"/x"},
			Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{}}}},
	}
	if err := a.Prepare(lp); err != nil {
		t.Fatal(err)
	}
	if filepath.Base(lp.bin) != "cat" || !slices.Equal(lp.args, []string{"/x"}) || !slices.Equal(lp.env, []string{"A=1"}) {
		t.Errorf("bin %s args %q env %q", lp.bin, lp.args, lp.env)
	}
	lp.container.Command = nil
	lp.container.Args = nil
	if err := a.Prepare(lp); err == nil {
		t.Error("a container without a command was prepared")
	}

	// With a log to play: a command that is no program here (the image's
	// mpirun) plays it; one that is (cat) still runs; a missing log fails
	// the container, naming it.
	play := filepath.Join(t.TempDir(), "nccl-tests.txt")
	p := Command{Image: a.Image, Container: "launcher", Play: play}.adapter()
	lp.adapter, lp.bin, lp.args, lp.env = p, "", nil, nil
	lp.container.Command = []string{"mpirun", "all_reduce_perf"}
	if err := p.Prepare(lp); err == nil || !strings.Contains(err.Error(), play) {
		t.Errorf("no log to play: %v, want an error naming %s", err, play)
	}
	if err := os.WriteFile(play, []byte("# nccl-tests\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.Prepare(lp); err != nil || filepath.Base(lp.bin) != "cat" || !slices.Equal(lp.args, []string{play}) {
		t.Errorf("playing %s: bin %s args %q, %v", play, lp.bin, lp.args, err)
	}
	lp.container.Command, lp.env = []string{"cat", "/y"}, nil
	if err := p.Prepare(lp); err != nil || !slices.Equal(lp.args, []string{"/y"}) {
		t.Errorf("a command that is a program here: args %q, %v; want it run", lp.args, err)
	}
}
