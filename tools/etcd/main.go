// Command etcd is etcd's server entry point, built from the etcd server module so
// the test environment needs no download beyond the Go module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
