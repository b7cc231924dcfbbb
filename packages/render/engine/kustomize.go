package main

import (
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// KustomizeInput is `kustomize build` of one directory, with the fields of a Flux Kustomization that change
// the build written into that directory's kustomization first (as Flux's kustomize-controller does).
type KustomizeInput struct {
	// Path is the repo-relative directory to build.
	Path string `json:"path"`
	// Namespace sets the kustomization's namespace (Flux: targetNamespace).
	Namespace   string            `json:"namespace,omitempty"`
	NamePrefix  string            `json:"namePrefix,omitempty"`
	NameSuffix  string            `json:"nameSuffix,omitempty"`
	Images      []types.Image     `json:"images,omitempty"`
	Patches     []types.Patch     `json:"patches,omitempty"`
	Components  []string          `json:"components,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

const memRoot = "/"

func renderKustomize(files []File, input *KustomizeInput) ([]Object, error) {
	fs := filesys.MakeFsInMemory()
	for _, file := range files {
		if err := fs.WriteFile(memRoot+file.Path, file.Data); err != nil {
			return nil, invalid("cannot hold %s: %v", file.Path, err)
		}
	}
	dir := path.Clean(memRoot + input.Path)
	if err := prepareKustomization(fs, dir, input); err != nil {
		return nil, err
	}
	if err := refuseRemoteBases(fs, dir); err != nil {
		return nil, err
	}
	options := krusty.MakeDefaultOptions()
	// Only files under the kustomization's own root (bases are roots of their own); builtin plugins only, so
	// no exec or container KRM function and no Go plugin runs; the order `kustomize build` prints.
	options.LoadRestrictions = types.LoadRestrictionsRootOnly
	options.PluginConfig = types.DisabledPluginConfig()
	options.Reorder = krusty.ReorderOptionLegacy
	resources, err := krusty.MakeKustomizer(options).Run(fs, dir)
	if err != nil {
		return nil, kustomizeError(err)
	}
	out := make([]Object, 0, resources.Size())
	for _, resource := range resources.Resources() {
		body, err := resource.MarshalJSON()
		if err != nil {
			return nil, invalid("%s: %v", resource.CurId(), err)
		}
		out = append(out, Object{Object: body})
	}
	return out, nil
}

// kustomizeError names what a render may not do when that is why the build failed.
func kustomizeError(err error) error {
	message := strings.ReplaceAll(err.Error(), "'"+memRoot, "'")
	switch {
	case strings.Contains(message, "no 'git' program on path"):
		return refused("%s (remote bases are not fetched: vendor the base into the repository)", message)
	case strings.Contains(message, errNoNetwork.Error()):
		return refused("%s", message)
	case strings.Contains(message, "external plugins disabled") || strings.Contains(message, "function"):
		if strings.Contains(message, "plugin") || strings.Contains(message, "exec") || strings.Contains(message, "container") {
			return refused("%s (KRM functions and plugins do not run in Syncline renders)", message)
		}
	}
	return invalid("%s", message)
}

// prepareKustomization writes the input's fields into the kustomization at dir, or generates one listing the
// directory's manifests when it has none (as Flux does).
func prepareKustomization(fs filesys.FileSystem, dir string, input *KustomizeInput) error {
	name := ""
	for _, candidate := range konfig.RecognizedKustomizationFileNames() {
		if fs.Exists(path.Join(dir, candidate)) {
			name = candidate
			break
		}
	}
	changes := input.Namespace != "" || input.NamePrefix != "" || input.NameSuffix != "" || len(input.Images) > 0 ||
		len(input.Patches) > 0 || len(input.Components) > 0 || len(input.Labels) > 0 || len(input.Annotations) > 0
	if name != "" && !changes {
		return nil
	}
	kustomization := &types.Kustomization{}
	if name == "" {
		if !fs.IsDir(dir) {
			return invalid("%s: no such directory in the repository", strings.TrimPrefix(dir, memRoot))
		}
		name = konfig.DefaultKustomizationFileName()
		resources, err := generatedResources(fs, dir)
		if err != nil {
			return err
		}
		kustomization.Resources = resources
	} else {
		data, err := fs.ReadFile(path.Join(dir, name))
		if err != nil {
			return invalid("%v", err)
		}
		if err := kustomization.Unmarshal(data); err != nil {
			return invalid("%s: %v", strings.TrimPrefix(path.Join(dir, name), memRoot), err)
		}
	}
	kustomization.FixKustomization()
	if input.Namespace != "" {
		kustomization.Namespace = input.Namespace
	}
	if input.NamePrefix != "" {
		kustomization.NamePrefix = input.NamePrefix
	}
	if input.NameSuffix != "" {
		kustomization.NameSuffix = input.NameSuffix
	}
	kustomization.Images = append(kustomization.Images, input.Images...)
	kustomization.Patches = append(kustomization.Patches, input.Patches...)
	kustomization.Components = append(kustomization.Components, input.Components...)
	if len(input.Labels) > 0 {
		// Flux's commonMetadata: on every object, never on selectors (a selector change would strand Pods).
		kustomization.Labels = append(kustomization.Labels, types.Label{Pairs: input.Labels})
	}
	if len(input.Annotations) > 0 {
		if kustomization.CommonAnnotations == nil {
			kustomization.CommonAnnotations = map[string]string{}
		}
		for key, value := range input.Annotations {
			kustomization.CommonAnnotations[key] = value
		}
	}
	body, err := yaml.Marshal(kustomization)
	if err != nil {
		return invalid("%v", err)
	}
	return fs.WriteFile(path.Join(dir, name), body)
}

// generatedResources lists what a directory without a kustomization holds: manifests, and subdirectories that
// are kustomizations of their own; other subdirectories are searched the same way.
func generatedResources(fs filesys.FileSystem, dir string) ([]string, error) {
	var resources []string
	var walk func(current string) error
	walk = func(current string) error {
		entries, err := fs.ReadDir(current)
		if err != nil {
			return invalid("%v", err)
		}
		sort.Strings(entries)
		for _, entry := range entries {
			full := path.Join(current, entry)
			relative := strings.TrimPrefix(strings.TrimPrefix(full, dir), "/")
			if strings.HasPrefix(entry, ".") {
				continue
			}
			if fs.IsDir(full) {
				if hasKustomization(fs, full) {
					resources = append(resources, relative)
					continue
				}
				if err := walk(full); err != nil {
					return err
				}
				continue
			}
			if strings.HasSuffix(entry, ".yaml") || strings.HasSuffix(entry, ".yml") || strings.HasSuffix(entry, ".json") {
				resources = append(resources, relative)
			}
		}
		return nil
	}
	if err := walk(dir); err != nil {
		return nil, err
	}
	return resources, nil
}

func hasKustomization(fs filesys.FileSystem, dir string) bool {
	for _, candidate := range konfig.RecognizedKustomizationFileNames() {
		if fs.Exists(path.Join(dir, candidate)) {
			return true
		}
	}
	return false
}
