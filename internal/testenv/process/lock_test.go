package process

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// otherHolder takes the lock file as another process would: its own open
// file description, which flock(2) treats as a different owner.
func otherHolder(t *testing.T, name string) (locked bool, unlock func()) {
	t.Helper()
	f, err := os.OpenFile(LockPath(name), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false, func() {}
	}
	return true, func() { f.Close() }
}

func TestMachineLock(t *testing.T) {
	name := fmt.Sprintf("test-%d", os.Getpid())
	t.Cleanup(func() { os.Remove(LockPath(name)) })

	locked, unlock := otherHolder(t, name)
	if !locked {
		t.Fatal("could not take a fresh lock file")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	var heard []string
	_, err := MachineLock(ctx, name, func(m string) { heard = append(heard, m) })
	cancel()
	if err == nil || !strings.Contains(err.Error(), "held by another process") {
		t.Fatalf("acquired a lock another process holds: %v", err)
	}
	if len(heard) != 1 || !strings.Contains(heard[0], LockPath(name)) {
		t.Fatalf("the wait was reported as %q, want one line naming %s", heard, LockPath(name))
	}

	// Released by the other holder: acquired, and shared within the process.
	done := make(chan func(), 1)
	go func() {
		r, err := MachineLock(context.Background(), name, nil)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	time.Sleep(300 * time.Millisecond)
	unlock()
	var first func()
	select {
	case first = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("not acquired within 5 s of the other holder releasing it")
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	second, err := MachineLock(ctx, name, nil)
	if err != nil {
		t.Fatalf("a second holder in the same process waited: %v", err)
	}
	first()
	first() // a second call gives nothing back twice
	if locked, unlock := otherHolder(t, name); locked {
		unlock()
		t.Fatal("released while a holder in this process still held it")
	}
	second()
	locked, unlock = otherHolder(t, name)
	if !locked {
		t.Fatal("still held after every holder in this process released it")
	}
	unlock()
}
