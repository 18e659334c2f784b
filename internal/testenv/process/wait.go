package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// ErrPortInUse marks a start that failed because a process's port was taken.
var ErrPortInUse = errors.New("port already in use")

// WaitHTTP polls url until it answers 200, failing early if p exits, at the
// latest after timeout. Errors carry the tail of logPath.
func WaitHTTP(ctx context.Context, p *Proc, url string, client *http.Client, timeout time.Duration, logPath string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := "no answer yet"
	for {
		if p.Exited() {
			log := LogTail(logPath)
			if strings.Contains(log, "address already in use") {
				return fmt.Errorf("testenv: %s: %w", p.Name, ErrPortInUse)
			}
			return fmt.Errorf("testenv: %s exited (%v) before %s was ok\n%s", p.Name, p.err, url, log)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, Tail(string(body), 10))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s: %s not ok after %s (last: %s)\n%s", p.Name, url, timeout, last, LogTail(logPath))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// FreePorts returns n distinct free loopback ports. All are held open at once
// so that they differ; another process may still take one before it is used.
func FreePorts(n int) ([]int, error) {
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// LogTail returns the last lines of a process's log, for error messages.
func LogTail(path string) string {
	tail, err := TailFile(path, 30, 0)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return fmt.Sprintf("--- last lines of %s:\n%s", path, tail)
}

// TailFile returns the last n lines of the file at path, each cut to width
// characters when width > 0.
func TailFile(path string, n, width int) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tail := Tail(string(data), n)
	if width <= 0 {
		return tail, nil
	}
	lines := strings.Split(tail, "\n")
	for i, l := range lines {
		if len(l) > width {
			lines[i] = l[:width] + "…"
		}
	}
	return strings.Join(lines, "\n"), nil
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
