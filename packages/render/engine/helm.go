package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"

	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/ignore"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// HelmInput is `helm template` of a chart held in the repository.
type HelmInput struct {
	// Chart is the repo-relative chart directory (its Chart.yaml, templates/, charts/ ...).
	Chart       string         `json:"chart"`
	ReleaseName string         `json:"releaseName"`
	Namespace   string         `json:"namespace"`
	Values      map[string]any `json:"values,omitempty"`
	IncludeCRDs bool           `json:"includeCRDs"`
	SkipTests   bool           `json:"skipTests"`
	// KubeVersion and APIVersions make .Capabilities (from the target cluster's discovery when known).
	KubeVersion string   `json:"kubeVersion,omitempty"`
	APIVersions []string `json:"apiVersions,omitempty"`
}

var utf8bom = []byte{0xEF, 0xBB, 0xBF}

// The steps of `helm template` (helm's action.Install in client-only mode and its renderResources), from
// Helm's own packages, with the cluster replaced by a refusal: `lookup` fails the render instead of reading a
// cluster (or silently answering nothing).
func renderHelm(files []File, input *HelmInput) ([]Object, error) {
	loaded, err := chartFiles(files, input.Chart)
	if err != nil {
		return nil, err
	}
	ch, err := loader.LoadFiles(loaded)
	if err != nil {
		return nil, invalid("%s: %v", input.Chart, err)
	}
	if ch.Metadata.Type != "" && ch.Metadata.Type != "application" {
		return nil, invalid("%s: %s charts are not installable", input.Chart, ch.Metadata.Type)
	}
	if err := checkDependencies(ch); err != nil {
		return nil, invalid("%s: %v", input.Chart, err)
	}
	if err := checkSchemas(ch); err != nil {
		return nil, err
	}
	values := input.Values
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, values); err != nil {
		return nil, invalid("%v", err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	if input.KubeVersion != "" {
		version, err := chartutil.ParseKubeVersion(input.KubeVersion)
		if err != nil {
			return nil, invalid("kubeVersion %q: %v", input.KubeVersion, err)
		}
		caps.KubeVersion = *version
	}
	caps.APIVersions = append(caps.APIVersions, input.APIVersions...)
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, invalid("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	options := chartutil.ReleaseOptions{Name: input.ReleaseName, Namespace: input.Namespace, Revision: 1, IsInstall: true}
	renderValues, err := chartutil.ToRenderValuesWithSchemaValidation(ch, values, options, caps, false)
	if err != nil {
		return nil, invalid("%v", err)
	}
	rendered, err := engine.RenderWithClientProvider(ch, renderValues, refusedLookup{})
	if err != nil {
		if strings.Contains(err.Error(), errLookup) {
			return nil, refused("%v", err)
		}
		return nil, invalid("%v", err)
	}
	for name := range rendered {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(rendered, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(rendered, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, invalid("%v", err)
	}
	var out []Object
	if input.IncludeCRDs {
		for _, crd := range ch.CRDObjects() {
			objects, err := manifestObjects(crd.Filename, string(crd.File.Data))
			if err != nil {
				return nil, err
			}
			out = append(out, objects...)
		}
	}
	for _, manifest := range manifests {
		objects, err := manifestObjects(manifest.Name, manifest.Content)
		if err != nil {
			return nil, err
		}
		out = append(out, objects...)
	}
	for _, hook := range hooks {
		if input.SkipTests && isTestHook(hook) {
			continue
		}
		objects, err := manifestObjects(hook.Path, hook.Manifest)
		if err != nil {
			return nil, err
		}
		out = append(out, objects...)
	}
	return out, nil
}

const errLookup = "lookup is refused"

// refusedLookup answers Helm's `lookup`: a render reads the repository, never a cluster.
type refusedLookup struct{}

func (refusedLookup) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	return nil, false, fmt.Errorf("%s (%s %s): a render reads only the repository, never a cluster", errLookup, apiVersion, kind)
}

func isTestHook(hook *release.Hook) bool {
	for _, event := range hook.Events {
		if event == release.HookTest {
			return true
		}
	}
	return false
}

// manifestObjects splits one rendered file into its documents, as JSON (the conversion the API server's
// clients make, so a value reads as Kubernetes will read it).
func manifestObjects(source, content string) ([]Object, error) {
	documents := releaseutil.SplitManifests(content)
	keys := make([]string, 0, len(documents))
	for key := range documents {
		keys = append(keys, key)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var out []Object
	for _, key := range keys {
		body, err := documentJSON(documents[key])
		if err != nil {
			return nil, invalid("%s: %v", source, err)
		}
		if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
			continue
		}
		out = append(out, Object{Source: source, Object: body})
	}
	return out, nil
}

// converted remembers the JSON of documents seen lately (a chart's CRDs and unchanged templates render to
// the same text every time): the conversion is most of a large chart's render. Bounded; cleared when full.
var converted = map[[32]byte][]byte{}

const maxConverted = 4096

func documentJSON(document string) ([]byte, error) {
	key := sha256.Sum256([]byte(document))
	if body, ok := converted[key]; ok {
		return body, nil
	}
	body, err := yaml.YAMLToJSON([]byte(document))
	if err != nil {
		return nil, err
	}
	if len(converted) >= maxConverted {
		converted = map[[32]byte][]byte{}
	}
	converted[key] = body
	return body, nil
}

// chartFiles are the chart directory's files as Helm's directory loader would read them: .helmignore applied,
// paths relative to the chart, a UTF-8 BOM dropped.
func chartFiles(files []File, chartDir string) ([]*loader.BufferedFile, error) {
	prefix := strings.Trim(chartDir, "/")
	if prefix != "" {
		prefix += "/"
	}
	rules := ignore.Empty()
	for _, file := range files {
		if file.Path == prefix+ignore.HelmIgnore {
			parsed, err := ignore.Parse(bytes.NewReader(file.Data))
			if err != nil {
				return nil, invalid("%s: %v", file.Path, err)
			}
			rules = parsed
		}
	}
	rules.AddDefaults()
	var out []*loader.BufferedFile
	for _, file := range files {
		if !strings.HasPrefix(file.Path, prefix) {
			continue
		}
		name := strings.TrimPrefix(file.Path, prefix)
		if ignoredPath(rules, name, len(file.Data)) {
			continue
		}
		if len(file.Data) > int(loader.MaxDecompressedFileSize) {
			return nil, invalid("chart file %q is larger than the maximum file size %d", file.Path, loader.MaxDecompressedFileSize)
		}
		out = append(out, &loader.BufferedFile{Name: name, Data: bytes.TrimPrefix(file.Data, utf8bom)})
	}
	if len(out) == 0 {
		return nil, invalid("%s: no chart here (no files)", chartDir)
	}
	return out, nil
}

func ignoredPath(rules *ignore.Rules, name string, size int) bool {
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		if rules.Ignore(strings.Join(parts[:i], "/"), fileInfo{name: parts[i-1], dir: true}) {
			return true
		}
	}
	return rules.Ignore(name, fileInfo{name: parts[len(parts)-1], size: int64(size)})
}

// fileInfo describes an in-memory file to Helm's ignore rules.
type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (f fileInfo) Name() string { return f.name }
func (f fileInfo) Size() int64  { return f.size }
func (f fileInfo) Mode() fs.FileMode {
	if f.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (f fileInfo) ModTime() time.Time { return time.Time{} }
func (f fileInfo) IsDir() bool        { return f.dir }
func (f fileInfo) Sys() any           { return nil }

var _ os.FileInfo = fileInfo{}

// checkDependencies refuses, as `helm template` does, a chart whose Chart.yaml declares a dependency that
// charts/ does not hold: a render never runs `helm dependency update`.
func checkDependencies(ch *chart.Chart) error {
	var missing []string
	for _, required := range ch.Metadata.Dependencies {
		found := false
		for _, dependency := range ch.Dependencies() {
			if dependency.Name() == required.Name {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, required.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("found in Chart.yaml, but missing in charts/ directory: %s (dependencies are not downloaded at render time: vendor them into charts/)", strings.Join(missing, ", "))
	}
	return nil
}

// checkSchemas refuses a values.schema.json that points outside itself: Helm's schema validator would fetch
// an http(s) or file: reference.
func checkSchemas(ch *chart.Chart) error {
	if len(ch.Schema) > 0 {
		var schema any
		if err := json.Unmarshal(ch.Schema, &schema); err != nil {
			return invalid("%s/values.schema.json: %v", ch.ChartFullPath(), err)
		}
		if reference := externalReference(schema); reference != "" {
			return refused("%s/values.schema.json: the reference %q points outside the schema; a render reads nothing beyond the repository", ch.ChartFullPath(), reference)
		}
	}
	for _, dependency := range ch.Dependencies() {
		if err := checkSchemas(dependency); err != nil {
			return err
		}
	}
	return nil
}

func externalReference(node any) string {
	switch value := node.(type) {
	case map[string]any:
		for key, child := range value {
			if text, ok := child.(string); ok && (key == "$ref" || key == "$dynamicRef" || key == "$recursiveRef" || key == "$id") {
				if key == "$id" && !strings.Contains(text, ":") {
					continue
				}
				if !strings.HasPrefix(text, "#") {
					return text
				}
			}
			if text, ok := child.(string); ok && key == "$schema" && !knownMetaSchema(text) {
				return text
			}
			if found := externalReference(child); found != "" {
				return found
			}
		}
	case []any:
		for _, child := range value {
			if found := externalReference(child); found != "" {
				return found
			}
		}
	}
	return ""
}

func knownMetaSchema(url string) bool {
	trimmed := strings.TrimSuffix(strings.TrimSuffix(url, "#"), "/")
	for _, known := range []string{"json-schema.org/draft-04/schema", "json-schema.org/draft-06/schema", "json-schema.org/draft-07/schema", "json-schema.org/draft/2019-09/schema", "json-schema.org/draft/2020-12/schema", "json-schema.org/schema"} {
		if strings.HasSuffix(trimmed, known) {
			return true
		}
	}
	return false
}
