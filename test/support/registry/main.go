// The CNCF distribution registry for tests: its own registry package with the filesystem storage driver and
// nothing else (the upstream command also links the Azure, GCS and S3 drivers, which triples a cold build).
package main

import (
	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

func main() {
	// nolint:errcheck
	registry.RootCmd.Execute()
}
