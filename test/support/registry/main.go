// The CNCF distribution registry for tests: its own registry package with the filesystem storage driver and
// nothing else (the upstream command also links the Azure, GCS and S3 drivers, which triples a cold build).
// `registry htpasswd <user>` prints an htpasswd line for the password read on stdin, bcrypt-hashed with the
// library the registry's htpasswd access controller verifies with.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/auth/token"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	"golang.org/x/crypto/bcrypt"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "htpasswd" {
		password, err := io.ReadAll(os.Stdin)
		if err == nil {
			var hash []byte
			hash, err = bcrypt.GenerateFromPassword([]byte(strings.TrimRight(string(password), "\n")), bcrypt.DefaultCost)
			if err == nil {
				fmt.Printf("%s:%s\n", os.Args[2], hash)
				return
			}
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// nolint:errcheck
	registry.RootCmd.Execute()
}
