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

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores/gobuild"
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

// Where the servers are inside the images: the official images' paths, so
// the runner starts a built image and a pulled one the same way.
const (
	EtcdBinary   = "/usr/local/bin/etcd"
	ConsulBinary = "/bin/consul"
	// JavaHome is the ZooKeeper image's JAVA_HOME; Java is JavaHome/bin/java.
	JavaHome = "/opt/java/openjdk"
)

// ZooKeeperHome is the official ZooKeeper image's installation directory
// for version; its lib/ directory holds the jars.
func ZooKeeperHome(version string) string {
	return "/apache-zookeeper-" + strings.TrimPrefix(version, "v") + "-bin"
}

// ZooKeeperClassPath is the Java class path that runs ZooKeeper version in
// its image.
func ZooKeeperClassPath(version string) string { return ZooKeeperHome(version) + "/lib/*" }

// DebianZooKeeper is the only ZooKeeper version Build can make: the one
// Debian bookworm packages.
const DebianZooKeeper = "3.8.0"

// repo is store's official image repository and how its tags spell a
// version.
func repo(store string) (name, tagPrefix string, ok bool) {
	switch store {
	case plan.StoreEtcd:
		return "gcr.io/etcd-development/etcd", "v", true
	case plan.StoreConsul:
		return "hashicorp/consul", "", true
	case plan.StoreZooKeeper:
		return "zookeeper", "", true
	}
	return "", "", false
}

// Default is the image a cluster of store at version runs when it names no
// image: the official image's name. An empty version means the store's
// default version; a leading "v" is optional. Unknown stores have no image
// and get "".
func Default(store, version string) string {
	name, prefix, ok := repo(store)
	if !ok {
		return ""
	}
	if version == "" {
		version = plan.DefaultVersion(store)
	}
	return name + ":" + prefix + strings.TrimPrefix(version, "v")
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
	for _, s := range plan.StoreNames() {
		out = append(out, Spec{Store: s, Version: plan.DefaultVersion(s)})
	}
	return out
}

// ParseSpec reads STORE[@VERSION] as the command line writes it. Without a
// version (or with an empty one) the store's default version is meant.
// Errors say what is wrong with the argument, so they are bad input.
func ParseSpec(arg string) (Spec, error) {
	store, version, _ := strings.Cut(arg, "@")
	if _, _, ok := repo(store); !ok {
		return Spec{}, fmt.Errorf("%q: unknown store; write one of %s, optionally with @VERSION", arg, strings.Join(plan.StoreNames(), ", "))
	}
	if version == "" {
		version = plan.DefaultVersion(store)
	}
	if err := checkVersion(store, version); err != nil {
		return Spec{}, err
	}
	return Spec{Store: store, Version: strings.TrimPrefix(version, "v")}, nil
}

// checkVersion refuses versions Build cannot make, before anything slow
// starts.
func checkVersion(store, version string) error {
	example := plan.DefaultVersion(store)
	v, err := gobuild.ParseVersion(store, example, version)
	if err != nil {
		return err
	}
	switch store {
	case plan.StoreEtcd:
		if !v.AtLeast(3, 4) || v.Major != 3 {
			return fmt.Errorf("etcd version %q: only 3.x releases from 3.4 on can be built", version)
		}
	case plan.StoreConsul:
		if v.Major != 1 {
			return fmt.Errorf("consul version %q: only 1.x releases can be built", version)
		}
	case plan.StoreZooKeeper:
		// The image is Debian's zookeeper package: the version Debian
		// ships is the only one there is.
		if strings.TrimPrefix(version, "v") != DebianZooKeeper {
			return fmt.Errorf("zookeeper version %q: only %s can be built here, from Debian bookworm's zookeeper package; where a registry is reachable, docker pull %s instead",
				version, DebianZooKeeper, Default(store, version))
		}
	}
	return nil
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
	for _, store := range plan.StoreNames() {
		r, prefix, _ := repo(store)
		if name != r || !strings.HasPrefix(version, prefix) {
			continue
		}
		s, err := ParseSpec(store + "@" + strings.TrimPrefix(version, prefix))
		if err != nil || s.Tag() != tag {
			return Spec{}, false
		}
		return s, true
	}
	return Spec{}, false
}
