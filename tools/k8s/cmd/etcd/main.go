// Command etcd is the etcd server of the pinned go.etcd.io/etcd/server/v3 module; the module
// ships the server as a library (etcdmain), its own main lives in a module that is not published
// for this version.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
