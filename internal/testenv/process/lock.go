package process

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// A machine lock is held by at most one process on the machine at a time:
// for what the test packages that `go test -p 2` runs at once cannot share,
// such as a controller's fixed port (the MPI Operator's :8080). Within a
// process it is shared: every holder there counts, and the lock is released
// when the last one releases it (an Env that runs the controller, its pod,
// a test that waits for it). Between processes it is an flock(2) on a file
// in the temporary directory, so a process that dies releases it.
type machineLock struct {
	mu      sync.Mutex // serialises acquiring and releasing
	file    *os.File
	holders int
}

var (
	machineLocksMu sync.Mutex
	machineLocks   = map[string]*machineLock{}
)

// LockPath is the file behind the machine lock name.
func LockPath(name string) string {
	return filepath.Join(os.TempDir(), "aiplatform-testenv-"+name+".lock")
}

// lockReport is how often a wait for a machine lock says it still waits.
const lockReport = 30 * time.Second

// MachineLock waits until this process holds the machine lock name (at once
// when it already does), or ctx ends. wait, when not nil, hears once that
// another process holds it and then every 30 s. release gives this holder's
// share back; it is safe to call more than once.
func MachineLock(ctx context.Context, name string, wait func(string)) (release func(), err error) {
	machineLocksMu.Lock()
	l := machineLocks[name]
	if l == nil {
		l = &machineLock{}
		machineLocks[name] = l
	}
	machineLocksMu.Unlock()

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holders == 0 {
		f, err := os.OpenFile(LockPath(name), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return nil, fmt.Errorf("testenv: machine lock %s: %w", name, err)
		}
		start, reported := time.Now(), time.Time{}
		for {
			err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil {
				break
			}
			if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
				f.Close()
				return nil, fmt.Errorf("testenv: machine lock %s (%s): %w", name, LockPath(name), err)
			}
			if wait != nil && time.Since(reported) >= lockReport {
				wait(fmt.Sprintf("waiting for the machine lock %s, held by another process (%s) for %s",
					name, LockPath(name), time.Since(start).Round(time.Second)))
				reported = time.Now()
			}
			select {
			case <-ctx.Done():
				f.Close()
				return nil, fmt.Errorf("testenv: waited %s for the machine lock %s (%s), held by another process: %w",
					time.Since(start).Round(time.Second), name, LockPath(name), ctx.Err())
			case <-time.After(250 * time.Millisecond):
			}
		}
		l.file = f
	}
	l.holders++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.holders--; l.holders == 0 {
				l.file.Close() // closing the only descriptor releases the flock
				l.file = nil
			}
		})
	}, nil
}
