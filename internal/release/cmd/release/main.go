// Command release runs the release build with the pinned goreleaser (built
// on first use into testenv's binary cache):
//
//	release goreleaser            build goreleaser if missing, print its path
//	release snapshot [targets]    archives of the host (or the targets, e.g. linux_amd64) in bin/dist
//	release run ARGS...           goreleaser ARGS (make release: `run release --clean`)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/release"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: release goreleaser | snapshot [targets...] | run ARGS...")
	}
	repo, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	switch args[0] {
	case "goreleaser":
		bin, err := release.EnsureGoreleaser(ctx, os.Stderr)
		if err == nil {
			fmt.Println(bin)
		}
		return err
	case "snapshot":
		dist := filepath.Join(repo, "bin", "dist")
		if err := release.Snapshot(ctx, os.Stderr, repo, dist, args[1:]...); err != nil {
			return err
		}
		files, _ := filepath.Glob(filepath.Join(dist, release.Project+"_*"))
		sort.Strings(files)
		for _, f := range files {
			fmt.Println(f)
		}
		return nil
	case "run":
		bin, err := release.EnsureGoreleaser(ctx, os.Stderr)
		if err != nil {
			return err
		}
		return release.Run(ctx, os.Stderr, bin, repo, args[1:]...)
	}
	return fmt.Errorf("unknown command %q", args[0])
}
