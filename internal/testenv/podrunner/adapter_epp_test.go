package podrunner

import (
	"slices"
	"testing"
)

// The picker's three ports move to the given local ports whichever way the
// container spells the flags, and the container's ports are reported; the
// other flags stay as they are.
func TestEPPFlags(t *testing.T) {
	args := []string{"--pool-name=p", "--grpc-port", "9100", "--metrics-port=9191", "--secure-serving=false"}
	got := []int{}
	for i, f := range []struct {
		flag string
		def  int
	}{{"--grpc-port", eppGRPCPort}, {"--grpc-health-port", eppHealthPort}, {"--metrics-port", eppMetricsPort}} {
		port, err := eppFlag(&args, f.flag, f.def, 40000+i)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, port)
	}
	if want := []int{9100, 9003, 9191}; !slices.Equal(got, want) {
		t.Errorf("container ports %v, want %v", got, want)
	}
	want := []string{"--pool-name=p", "--secure-serving=false", "--grpc-port=40000", "--grpc-health-port=40001", "--metrics-port=40002"}
	if !slices.Equal(args, want) {
		t.Errorf("args %q, want %q", args, want)
	}
	bad := []string{"--grpc-port=x"}
	if _, err := eppFlag(&bad, "--grpc-port", 9002, 1); err == nil {
		t.Error("--grpc-port=x accepted")
	}
}
