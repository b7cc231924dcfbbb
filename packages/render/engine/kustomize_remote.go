package main

import (
	"path"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// A remote base or resource, as Kustomize reads one when the entry names nothing in the repository: a URL
// (https://, ssh://, git::), scp-like git@host:org/repo, a repo spec with `//` or `?ref=`, or a host name with
// a top-level domain followed by a path (github.com/org/repo).
var (
	remoteScheme = regexp.MustCompile(`^(?:[A-Za-z][A-Za-z0-9+.-]*::)?[A-Za-z][A-Za-z0-9+.-]*://`)
	remoteScp    = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:`)
	remoteHost   = regexp.MustCompile(`^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?::[0-9]+)?/`)
	remoteQuery  = regexp.MustCompile(`[?&](?:ref|version|submodules|timeout)=`)
)

func isRemoteEntry(entry string) bool {
	return remoteScheme.MatchString(entry) || remoteScp.MatchString(entry) || remoteHost.MatchString(entry) ||
		remoteQuery.MatchString(entry) || strings.Contains(strings.TrimPrefix(entry, "/"), "//")
}

// refuseRemoteBases walks the kustomizations a build of dir reads (resources, components and the older bases,
// following local directories) and refuses the first entry that is remote, naming the kustomization file and
// the entry. Kustomize would clone it with git or GET it over HTTP; a render reads only the repository, as
// Flux's kustomize-controller does with --no-remote-bases. The process's isolation (no git on PATH, no
// network) stays behind this as a second wall.
func refuseRemoteBases(fs filesys.FileSystem, dir string) error {
	seen := map[string]bool{}
	var walk func(current string) error
	walk = func(current string) error {
		if seen[current] || len(seen) > 10000 {
			return nil
		}
		seen[current] = true
		name := ""
		for _, candidate := range konfig.RecognizedKustomizationFileNames() {
			if fs.Exists(path.Join(current, candidate)) {
				name = path.Join(current, candidate)
				break
			}
		}
		if name == "" {
			return nil
		}
		data, err := fs.ReadFile(name)
		if err != nil {
			return nil
		}
		kustomization := &types.Kustomization{}
		if kustomization.Unmarshal(data) != nil {
			// Kustomize reports the file's own error when it reads it.
			return nil
		}
		kustomization.FixKustomization()
		file := strings.TrimPrefix(name, memRoot)
		for _, list := range []struct {
			field   string
			entries []string
		}{{"resources", kustomization.Resources}, {"components", kustomization.Components}} {
			for _, entry := range list.entries {
				local := path.Join(current, entry)
				if path.IsAbs(entry) || !fs.Exists(local) {
					if isRemoteEntry(entry) {
						return refused("%s: %s entry %q is a remote base or resource, and remote bases are not fetched: a render reads only the repository (vendor it into the repository)", file, list.field, entry)
					}
					continue
				}
				if fs.IsDir(local) {
					if err := walk(local); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	return walk(dir)
}
