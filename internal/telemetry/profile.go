package telemetry

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"
)

// ProfileEnv names a directory into which the provider writes profiles of
// itself, for finding where a slow or large plan spends its time and memory:
//
//	AIPLATFORM_PROFILE=/tmp/prof terraform plan
//	go tool pprof -top terraform-provider-aiplatform /tmp/prof/cpu-*.pprof
//	go tool pprof -top -sample_index=inuse_space terraform-provider-aiplatform /tmp/prof/heap-<pid>-<n>.pprof
//
// With no exit hook, the CPU profile is cut into files of one second each,
// cpu-<pid>-<n>.pprof (pprof merges them), and a heap profile is written at the
// end of each, heap-<pid>-<n>.pprof; only the part of the last second before
// Terraform stops the process is lost.
const ProfileEnv = "AIPLATFORM_PROFILE"

var profiling sync.Once

// StartProfiling starts writing profiles into the directory named by
// ProfileEnv, when it is set, for the rest of the process's life; later
// calls do nothing.
func StartProfiling() {
	profiling.Do(func() {
		if dir := os.Getenv(ProfileEnv); dir != "" {
			go profile(dir, time.Second)
		}
	})
}

func profile(dir string, chunk time.Duration) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", ProfileEnv, err)
		return
	}
	write := func(kind string, n int, f func(io.Writer) error) error {
		out, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d-%03d.pprof", kind, os.Getpid(), n)))
		if err != nil {
			return err
		}
		defer out.Close()
		return f(out)
	}
	for n := 0; ; n++ {
		err := write("cpu", n, func(f io.Writer) error {
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			time.Sleep(chunk)
			pprof.StopCPUProfile()
			return nil
		})
		if err == nil {
			err = write("heap", n, pprof.WriteHeapProfile)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", ProfileEnv, err)
			return
		}
	}
}
