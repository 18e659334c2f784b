package binaries

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"
)

// The build lock is per binary: two binaries' locks are held at once, while a
// second taker of the same binary's lock waits (and says for what) until the
// first releases it.
func TestBuildLockPerBinary(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var log bytes.Buffer
	a := filepath.Join(dir, LockName("a-v1"))
	b := filepath.Join(dir, LockName("b-v1"))
	unlockA, err := lockFile(ctx, &log, a, "a-v1")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := lockFile(ctx, &log, b, "b-v1")
	if err != nil {
		t.Fatalf("b's lock while a's is held: %v", err)
	}
	unlockB()
	if log.Len() != 0 {
		t.Errorf("taking two different locks waited: %q", log.String())
	}

	short, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if _, err := lockFile(short, &log, a, "a-v1"); err == nil {
		t.Fatal("a second taker got a's lock while it was held")
	}
	if !bytes.Contains(log.Bytes(), []byte("building a-v1")) {
		t.Errorf("the waiting taker did not say what it waits for: %q", log.String())
	}
	unlockA()
	again, err := lockFile(ctx, &log, a, "a-v1")
	if err != nil {
		t.Fatalf("a's lock once released: %v", err)
	}
	again()
}
