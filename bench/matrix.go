package main

import (
	"context"
	"fmt"
	"time"
)

// matrixCell is one point of the grid: plan time at N nodes and M resources.
type matrixCell struct {
	Nodes     int
	Platform  platform
	ApplyAI   *run // the cold apply, at the first node count only
	ApplyFlr  *run
	PlanAI    stepRuns
	PlanFloor stepRuns
	State     nodeState
}

type matrixResult struct {
	Started    time.Time
	LoadBefore string
	Repeat     int
	Clusters   []clusterFacts
	Cells      []matrixCell
	Complete   bool
	Elapsed    time.Duration
}

// runMatrix grows the cluster through the node counts; at each it brings the
// platform of every size up to date (the first time a cold apply, which is
// timed; later an apply of the quotas that followed the new nodes, which is
// not) and times refresh + plan with no change against the floor.
func (b *bench) runMatrix(ctx context.Context) error {
	res := &matrixResult{Repeat: b.o.repeat, Started: time.Now(), LoadBefore: loadAvg()}
	start := time.Now()
	type pair struct{ ai, floor *workspace }
	spaces := map[int]pair{}
	total := len(b.o.matrixNodes) * len(b.o.matrixRes)
	for _, n := range b.o.matrixNodes {
		f, err := b.growCluster(ctx, n)
		if err != nil {
			return err
		}
		res.Clusters = append(res.Clusters, f)
		for _, m := range b.o.matrixRes {
			cell := matrixCell{Nodes: n, Platform: newPlatform(m, fmt.Sprintf("m%d-", m))}
			logf("matrix cell %d/%d: %d nodes, %v", len(res.Cells)+1, total, n, cell.Platform)
			ws, ok := spaces[m]
			if !ok {
				ai, floor, err := b.workspaces(fmt.Sprintf("m%d", m), cell.Platform)
				if err != nil {
					return err
				}
				ws = pair{ai, floor}
				spaces[m] = ws
			}
			fr, err := ws.floor.terraform(ctx, []string{"apply", "-auto-approve"})
			if err != nil {
				return err
			}
			ar, err := ws.ai.terraform(ctx, []string{"apply", "-auto-approve"})
			if err != nil {
				return err
			}
			logf("  apply: aiplatform %s (%s), terraform_data %s (%s)", secs(ar.Wall), ar.Changes, secs(fr.Wall), fr.Changes)
			if !ok {
				cell.ApplyAI, cell.ApplyFlr = &ar, &fr
			}
			plan := []string{"plan", "-detailed-exitcode"}
			if cell.PlanAI, cell.PlanFloor, err = b.pair(ctx, "plan", ws.ai, ws.floor, plan, plan); err != nil {
				return err
			}
			for _, r := range append(append(stepRuns{}, cell.PlanAI...), cell.PlanFloor...) {
				if r.ExitCode != 0 {
					return fmt.Errorf("plan right after apply is not empty:\n%s", tail(r.Output, 60))
				}
			}
			if cell.State, err = b.cluster.state(ctx); err != nil {
				return err
			}
			res.Cells = append(res.Cells, cell)
			res.Elapsed = time.Since(start)
			res.Complete = len(res.Cells) == total
			// Written after every cell, so that an interrupted grid leaves what it measured.
			md := res.markdown(b.machine, commandLine())
			if err := b.writeSection("matrix", md); err != nil {
				return err
			}
			if res.Complete {
				fmt.Println(md)
			}
		}
	}
	return nil
}
