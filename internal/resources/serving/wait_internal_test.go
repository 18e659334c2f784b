package serving

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPollReady(t *testing.T) {
	calls := 0
	last, timedOut, err := pollReady(context.Background(), "thing", func() (bool, string, error) {
		calls++
		return calls == 2, map[int]string{1: "starting", 2: "ready"}[calls], nil
	})
	if last != "ready" || timedOut || err != nil || calls != 2 {
		t.Errorf("done: got %q %v %v after %d calls", last, timedOut, err, calls)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	last, timedOut, err = pollReady(ctx, "thing", func() (bool, string, error) { return false, "1 of 2 ready", nil })
	if last != "1 of 2 ready" || !timedOut || err != nil {
		t.Errorf("timeout: got %q %v %v", last, timedOut, err)
	}

	boom := errors.New("boom")
	_, timedOut, err = pollReady(context.Background(), "thing", func() (bool, string, error) { return false, "", boom })
	if !errors.Is(err, boom) || timedOut {
		t.Errorf("error: got %v %v", timedOut, err)
	}

	// client-go's rate limiter refuses a request that could not go out
	// before the deadline, while ctx has not ended yet: that is the timeout,
	// not a failure of its own.
	rctx, rcancel := context.WithTimeout(context.Background(), time.Hour)
	defer rcancel()
	last, timedOut, err = pollReady(rctx, "thing", func() (bool, string, error) {
		return false, "", errors.New("rate: Wait(n=1) would exceed context deadline")
	})
	if !timedOut || err != nil || last != "" {
		t.Errorf("rate limiter at the deadline: got %q %v %v", last, timedOut, err)
	}
}
