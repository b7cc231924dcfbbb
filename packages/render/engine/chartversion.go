package main

import (
	"encoding/json"
	"sort"

	"github.com/Masterminds/semver/v3"
)

// ChartVersionInput asks which of a chart's published versions Helm would pick for a version string: the
// entries of a repository's index.yaml, or the tags of an OCI repository (with `_` read back as `+`, as Helm
// writes them). The fetching is done by the caller; this only chooses, with Helm's semver library.
type ChartVersionInput struct {
	Versions []string `json:"versions"`
	Version  string   `json:"version"`
}

// chooseChartVersion is Helm's choice (repo.IndexFile.Get over entries sorted newest first, and
// registry.GetTagMatchingVersionOrConstraint): an exact match of the string first, then the newest version
// the constraint admits; an empty string admits every version that is not a prerelease ("*").
func chooseChartVersion(input *ChartVersionInput) ([]Object, error) {
	versions := append([]string(nil), input.Versions...)
	parsed := map[string]*semver.Version{}
	for _, v := range versions {
		if p, err := semver.NewVersion(v); err == nil {
			parsed[v] = p
		}
	}
	sort.SliceStable(versions, func(i, j int) bool {
		a, b := parsed[versions[i]], parsed[versions[j]]
		if a == nil || b == nil {
			return a != nil
		}
		return a.GreaterThan(b)
	})
	chosen := ""
	if input.Version != "" {
		for _, v := range versions {
			if v == input.Version {
				chosen = v
				break
			}
		}
	}
	if chosen == "" {
		constraint := "*"
		if input.Version != "" {
			constraint = input.Version
		}
		c, err := semver.NewConstraint(constraint)
		if err != nil {
			return nil, invalid("version %q is neither a version nor a semver range: %v", input.Version, err)
		}
		for _, v := range versions {
			if p := parsed[v]; p != nil && c.Check(p) {
				chosen = v
				break
			}
		}
	}
	if chosen == "" {
		return nil, invalid("no version matches %q (published: %d versions)", input.Version, len(versions))
	}
	body, _ := json.Marshal(map[string]string{"version": chosen})
	return []Object{{Object: body}}, nil
}
