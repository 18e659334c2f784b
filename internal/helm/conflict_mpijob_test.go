package helm

import "testing"

func TestReconcilesMPIJobs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, true}, // no --enable-scheme: every kind
		{[]string{"/manager"}, true},
		{[]string{"/manager", "--enable-scheme=pytorchjob", "--enable-scheme=tfjob"}, false},
		{[]string{"--enable-scheme=pytorchjob", "--enable-scheme=MPIJob"}, true},
		{[]string{"-enable-scheme", "mpijob"}, true},
		{[]string{"--enable-scheme", "xgboostjob"}, false},
		{[]string{"--gang-scheduler-name=volcano"}, true},
	} {
		if got := reconcilesMPIJobs(c.args); got != c.want {
			t.Errorf("reconcilesMPIJobs(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
