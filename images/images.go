// Package images builds the local Docker images the docker provider runs,
// on a machine with a Docker engine and no registry: nothing is pulled.
//
// BaseImage is a Debian bookworm root filesystem made by debootstrap and
// imported with the engine's image import; the runner uses it as every
// node's network sandbox. Each store image is that root filesystem plus the
// store's server, laid out where the official image has it and tagged with
// the official image's name (Default), so that a machine which can reach a
// registry pulls the real image and a scenario runs unchanged on both.
package images

import (
	"fmt"
	"strings"

	"github.com/coordlab/scenario/stores/registry"
)

// BaseImage is the Debian bookworm image every node's network sandbox runs
// (`sleep infinity`).
const BaseImage = "scenario/debian:bookworm"

// Labels on every image Build makes; List finds images by LabelBuiltBy.
const (
	LabelBuiltBy = "org.coordlab.scenario.built-by"
	LabelStore   = "org.coordlab.scenario.store"
	LabelVersion = "org.coordlab.scenario.version"
	// BuiltBy is LabelBuiltBy's value.
	BuiltBy = "scenario images build"
)

// Default is the image a cluster of store at version runs when it names no
// image: the official image's name. An empty version means the store's
// default version; a leading "v" is optional. Unknown stores have no image
// and get "".
func Default(store, version string) string {
	d, ok := registry.Lookup(store)
	if !ok {
		return ""
	}
	if version == "" {
		version = d.DefaultVersion
	}
	return d.Image.Repo + ":" + d.Image.TagPrefix + strings.TrimPrefix(version, "v")
}

// Spec is one store image to build.
type Spec struct {
	Store   string // plan.StoreEtcd, plan.StoreZooKeeper or plan.StoreConsul
	Version string // without a leading "v": "3.5.17"
}

// String is how the command line writes s: "etcd@3.5.17".
func (s Spec) String() string { return s.Store + "@" + s.Version }

// Tag is the image s builds.
func (s Spec) Tag() string { return Default(s.Store, s.Version) }

// DefaultSpecs are every store at its default version, what `scenario
// images build` makes when given no arguments.
func DefaultSpecs() []Spec {
	var out []Spec
	for _, d := range registry.All() {
		out = append(out, Spec{Store: d.Name, Version: d.DefaultVersion})
	}
	return out
}

// ParseSpec reads STORE[@VERSION] as the command line writes it. Without a
// version (or with an empty one) the store's default version is meant.
// Errors say what is wrong with the argument, so they are bad input.
func ParseSpec(arg string) (Spec, error) {
	store, version, _ := strings.Cut(arg, "@")
	d, ok := registry.Lookup(store)
	if !ok {
		return Spec{}, fmt.Errorf("%q: unknown store; write one of %s, optionally with @VERSION", arg, strings.Join(registry.Names(), ", "))
	}
	if version == "" {
		version = d.DefaultVersion
	}
	// Refuse what cannot be built before anything slow starts.
	if err := d.CheckVersion(version); err != nil {
		return Spec{}, err
	}
	if err := d.Image.Buildable(version); err != nil {
		return Spec{}, err
	}
	return Spec{Store: store, Version: strings.TrimPrefix(version, "v")}, nil
}

// SpecOf returns the Spec whose image is tag, if tag is one Build makes.
func SpecOf(tag string) (Spec, bool) {
	// The tag follows the last ':' after the last '/' (a registry host
	// may carry a port).
	i := strings.LastIndex(tag, ":")
	if i < 0 || strings.Contains(tag[i:], "/") {
		return Spec{}, false
	}
	name, version := tag[:i], tag[i+1:]
	for _, d := range registry.All() {
		if name != d.Image.Repo || !strings.HasPrefix(version, d.Image.TagPrefix) {
			continue
		}
		s, err := ParseSpec(d.Name + "@" + strings.TrimPrefix(version, d.Image.TagPrefix))
		if err != nil || s.Tag() != tag {
			return Spec{}, false
		}
		return s, true
	}
	return Spec{}, false
}
