package images

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// entry is one file an image adds to its root filesystem.
type entry struct {
	name     string // absolute path in the image: "/usr/local/bin/etcd"
	src      string // a regular file: the host file to copy
	linkname string // a symlink: its target
	dir      bool   // a directory
	mode     fs.FileMode
}

func file(name, src string) entry       { return entry{name: name, src: src, mode: 0o755} }
func symlink(name, target string) entry { return entry{name: name, linkname: target, mode: 0o777} }

// writeTar writes root, a root filesystem, and then extras as one tar
// stream for the engine's image import. Modes, owners, symlinks and hard
// links are kept; device nodes, FIFOs and sockets are left out because the
// engine makes /dev itself.
func writeTar(w io.Writer, root string, extras []entry) error {
	tw := tar.NewWriter(w)
	// Hard links within the tree (dpkg makes a few) are written once.
	type inode struct{ dev, ino uint64 }
	seen := map[inode]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		switch fi.Mode().Type() {
		case 0, fs.ModeDir:
		case fs.ModeSymlink:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			return nil
		}
		hdr, err := header(fi, name, link)
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && st.Nlink > 1 {
			key := inode{uint64(st.Dev), st.Ino}
			if first, ok := seen[key]; ok {
				hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
				return tw.WriteHeader(hdr)
			}
			seen[key] = name
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			return copyFile(tw, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("tar %s: %w", root, err)
	}
	if err := writeExtras(tw, root, extras); err != nil {
		return err
	}
	return tw.Close()
}

// header is fi's tar header under name, owned by fi's numeric owner only:
// the host's user names mean nothing in the image.
func header(fi fs.FileInfo, name, link string) (*tar.Header, error) {
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return nil, err
	}
	hdr.Name = name
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", ""
	hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
	return hdr, nil
}

func copyFile(w io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// writeExtras appends extras to a tar of root. Each goes where its path
// leads inside the image: bookworm's /bin is a symlink to usr/bin, so
// /bin/consul is written as usr/bin/consul, which the engine can unpack
// and the image's /bin/consul still names. Missing parent directories are
// added, owned by root.
func writeExtras(tw *tar.Writer, root string, extras []entry) error {
	now := time.Now().Truncate(time.Second)
	made := map[string]bool{}
	for _, e := range extras {
		dir, err := resolveInRoot(root, path.Dir(e.name))
		if err != nil {
			return fmt.Errorf("add %s: %w", e.name, err)
		}
		name := strings.TrimPrefix(path.Join(dir, path.Base(e.name)), "/")
		// Parents first, outermost first.
		var parents []string
		for d := strings.TrimPrefix(dir, "/"); d != "" && d != "."; d = path.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			d := parents[i]
			if made[d] {
				continue
			}
			if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(d))); err == nil {
				continue
			}
			made[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: now}); err != nil {
				return err
			}
		}
		hdr := &tar.Header{Name: name, Mode: int64(e.mode.Perm()), ModTime: now}
		switch {
		case e.dir:
			if made[name] {
				continue
			}
			made[name] = true
			hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
		case e.linkname != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.linkname
		default:
			fi, err := os.Stat(e.src)
			if err != nil {
				return fmt.Errorf("add %s: %w", e.name, err)
			}
			if !fi.Mode().IsRegular() {
				return fmt.Errorf("add %s: %s is not a regular file", e.name, e.src)
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			if err := copyFile(tw, e.src); err != nil {
				return fmt.Errorf("add %s: %w", e.name, err)
			}
		}
	}
	return nil
}

// maxLinks bounds symlink chains as the kernel does (ELOOP).
const maxLinks = 40

// resolveInRoot follows symlinks along the absolute path p as the image
// would see them, with root as "/", and returns the absolute in-image path
// they lead to. Components that do not exist are kept as written. Links
// never lead outside root: ".." stops at "/", as in a chroot.
func resolveInRoot(root, p string) (string, error) {
	todo := strings.Split(strings.TrimPrefix(path.Clean("/"+p), "/"), "/")
	cur := "/"
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == "" || c == "." {
			continue
		}
		next := path.Join(cur, c) // Join cleans "..", which stops at "/"
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(next)))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				cur = next
				continue
			}
			return "", err
		}
		if fi.Mode().Type() != fs.ModeSymlink {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(next)))
		if err != nil {
			return "", err
		}
		if path.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, nil
}
