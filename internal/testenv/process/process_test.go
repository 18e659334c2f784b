package process

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestPIDsAndStopProcesses(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	dir := t.TempDir()
	p, err := Start("sleep", sleep, []string{"60"}, filepath.Join(dir, "sleep.log"), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePIDs(dir, []Process{p.Process}); err != nil {
		t.Fatal(err)
	}
	procs, err := ReadPIDs(dir)
	if err != nil || len(procs) != 1 || procs[0] != p.Process {
		t.Fatalf("ReadPIDs = %v, %v", procs, err)
	}
	if !procs[0].Alive() {
		t.Fatal("not alive")
	}
	if (Process{PID: p.PID, Path: "/something/else"}).Alive() {
		t.Error("alive under another binary's name")
	}
	StopAll(procs)
	<-p.Done()
	if procs[0].Alive() {
		t.Error("alive after StopAll")
	}
	if none, err := ReadPIDs(t.TempDir()); none != nil || err != nil {
		t.Errorf("ReadPIDs of an empty dir = %v, %v", none, err)
	}
}

// A log's last lines, long ones cut (a pod runner's exit report).
func TestTailFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pod.log")
	if _, err := TailFile(path, 3, 10); err == nil {
		t.Error("a missing file: no error")
	}
	if err := os.WriteFile(path, []byte("one\ntwo\nthree\nfour is a long line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := TailFile(path, 3, 10); err != nil || got != "two\nthree\nfour is a …" {
		t.Errorf("TailFile = %q, %v; want %q", got, err, "two\nthree\nfour is a …")
	}
	if got, _ := TailFile(path, 1, 0); got != "four is a long line" {
		t.Errorf("TailFile without a width = %q", got)
	}
}
