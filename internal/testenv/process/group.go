package process

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
)

// Group is the processes of one environment, in start order: each logs to
// <Dir>/<name>.log, and a detached group keeps <Dir>/pids up to date. Stop
// goes in reverse order.
type Group struct {
	Dir    string
	Detach bool

	mu      sync.Mutex
	procs   []*Proc
	stopped bool
}

// LogPath is the file that receives a process's stdout and stderr.
func (g *Group) LogPath(name string) string { return filepath.Join(g.Dir, name+".log") }

// Start starts bin as the process name and records it, replacing an earlier,
// stopped process of the same name in place (so the stop order is unchanged).
func (g *Group) Start(name, bin string, args []string) (*Proc, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return nil, errors.New("testenv: environment is stopped")
	}
	p, err := Start(name, bin, args, g.LogPath(name), g.Detach)
	if err != nil {
		return nil, err
	}
	replaced := false
	for i, old := range g.procs {
		if old.Name == p.Name {
			g.procs[i], replaced = p, true
		}
	}
	if !replaced {
		g.procs = append(g.procs, p)
	}
	if g.Detach {
		if err := WritePIDs(g.Dir, g.running()); err != nil {
			return p, err
		}
	}
	return p, nil
}

// Find is the last process started under name, nil if none.
func (g *Group) Find(name string) *Proc {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.procs {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Running lists the processes still running, in start order.
func (g *Group) Running() []Process {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running()
}

func (g *Group) running() []Process {
	var out []Process
	for _, p := range g.procs {
		if !p.Exited() {
			out = append(out, p.Process)
		}
	}
	return out
}

// Stop stops every process in reverse start order and, for a detached group,
// removes the pids file. Later Starts fail.
func (g *Group) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	for i := len(g.procs) - 1; i >= 0; i-- {
		g.procs[i].Stop()
	}
	if g.Detach {
		_ = os.Remove(filepath.Join(g.Dir, PIDFile))
	}
}
