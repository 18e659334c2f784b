// Command sleeper waits until it is stopped: a stand-in controller binary
// that builds in seconds, for the pod runner's build-on-first-use test.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, os.Interrupt)
	<-c
}
