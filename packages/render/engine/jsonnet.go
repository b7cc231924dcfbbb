package main

import (
	"encoding/json"
	"path"
	"sort"
	"strings"

	jsonnet "github.com/google/go-jsonnet"
)

// JsonnetInput evaluates one Jsonnet file; its output is a Kubernetes object, a list of them, or objects
// nested in objects and arrays (as kubecfg and Tanka read it).
type JsonnetInput struct {
	// Main is the repo-relative file to evaluate.
	Main         string            `json:"main"`
	LibraryPaths []string          `json:"libraryPaths,omitempty"`
	ExtVars      map[string]string `json:"extVars,omitempty"`
	ExtCode      map[string]string `json:"extCode,omitempty"`
	TLAs         map[string]string `json:"tlas,omitempty"`
	TLACode      map[string]string `json:"tlaCode,omitempty"`
}

// memoryImporter resolves imports as the jsonnet CLI does (beside the importing file, then each library path
// in order), over the request's files only.
type memoryImporter struct {
	files map[string][]byte
	paths []string
	cache map[string]jsonnet.Contents
}

func (m *memoryImporter) Import(importedFrom, importedPath string) (jsonnet.Contents, string, error) {
	if path.IsAbs(importedPath) {
		return jsonnet.Contents{}, "", refused("import %q: absolute paths are not read; a render reads only the repository", importedPath)
	}
	candidates := []string{path.Join(path.Dir(importedFrom), importedPath)}
	for _, library := range m.paths {
		candidates = append(candidates, path.Join(library, importedPath))
	}
	for _, candidate := range candidates {
		if strings.HasPrefix(candidate, "../") || candidate == ".." {
			continue
		}
		if contents, ok := m.cache[candidate]; ok {
			return contents, candidate, nil
		}
		if data, ok := m.files[candidate]; ok {
			contents := jsonnet.MakeContentsRaw(data)
			m.cache[candidate] = contents
			return contents, candidate, nil
		}
	}
	return jsonnet.Contents{}, "", invalid("couldn't open import %q: no match in the repository (searched %s)", importedPath, strings.Join(candidates, ", "))
}

func renderJsonnet(files []File, input *JsonnetInput) ([]Object, error) {
	byPath := make(map[string][]byte, len(files))
	for _, file := range files {
		byPath[file.Path] = file.Data
	}
	vm := jsonnet.MakeVM()
	vm.Importer(&memoryImporter{files: byPath, paths: input.LibraryPaths, cache: map[string]jsonnet.Contents{}})
	for key, value := range input.ExtVars {
		vm.ExtVar(key, value)
	}
	for key, value := range input.ExtCode {
		vm.ExtCode(key, value)
	}
	for key, value := range input.TLAs {
		vm.TLAVar(key, value)
	}
	for key, value := range input.TLACode {
		vm.TLACode(key, value)
	}
	output, err := vm.EvaluateFile(input.Main)
	if err != nil {
		if strings.Contains(err.Error(), "absolute paths are not read") {
			return nil, refused("%v", err)
		}
		return nil, invalid("%v", err)
	}
	var value any
	decoder := json.NewDecoder(strings.NewReader(output))
	decoder.UseNumber()
	if err := decoder.Decode(&value); err != nil {
		return nil, invalid("%s: %v", input.Main, err)
	}
	var out []Object
	if err := collectObjects(value, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// collectObjects walks the output: a mapping with apiVersion and kind is an object; any other mapping or
// array holds objects.
func collectObjects(value any, out *[]Object) error {
	switch node := value.(type) {
	case map[string]any:
		if _, ok := node["kind"]; ok {
			if _, ok := node["apiVersion"]; ok {
				body, err := json.Marshal(node)
				if err != nil {
					return invalid("%v", err)
				}
				*out = append(*out, Object{Object: body})
				return nil
			}
		}
		keys := make([]string, 0, len(node))
		for key := range node {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			if err := collectObjects(node[key], out); err != nil {
				return err
			}
		}
	case []any:
		for _, child := range node {
			if err := collectObjects(child, out); err != nil {
				return err
			}
		}
	case nil:
	default:
		return invalid("the output holds %v where an object was expected: a Kubernetes object, a list of them or objects nested in objects", value)
	}
	return nil
}
