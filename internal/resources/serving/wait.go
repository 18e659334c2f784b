package serving

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// pollReady calls step every second until it reports done, fails, or ctx
// ends. Its progress line is logged at INFO on each change and at least
// every 15 s ("<what> not ready after 12s: <line>"), and once done ("<what>
// ready after 8.4s: <line>"); an empty line (nothing seen yet) is not
// logged. It returns the last line logged, and whether ctx ended first; an
// error of step ends the wait unless it comes from ctx's deadline (then it
// is the timeout).
func pollReady(ctx context.Context, what string, step func() (done bool, line string, err error)) (last string, timedOut bool, err error) {
	start, lastAt := time.Now(), time.Time{}
	for {
		done, line, err := step()
		switch {
		case err != nil && object.OutOfTime(ctx, err):
			return last, true, nil
		case err != nil:
			return last, false, err
		case err == nil && done:
			tflog.Info(ctx, fmt.Sprintf("%s ready after %s: %s", what, time.Since(start).Round(100*time.Millisecond), line))
			return line, false, nil
		case err == nil && line != "" && (line != last || time.Since(lastAt) >= 15*time.Second):
			tflog.Info(ctx, fmt.Sprintf("%s not ready after %s: %s", what, time.Since(start).Round(time.Second), line))
			last, lastAt = line, time.Now()
		}
		select {
		case <-ctx.Done():
			return last, true, nil
		case <-time.After(time.Second):
		}
	}
}
