package toolcache

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// evict removes the oldest files of a sealed copy (by modification time:
// Go marks the entries it uses) until it holds at most keep bytes. A
// module of Go's module cache goes whole or not at all: a module directory
// missing one file would fail every build that uses it.
func (s *Store) evict(root string, keep int64) (Stats, error) {
	type unit struct {
		paths []string
		bytes int64
		files int64
		mtime time.Time
	}
	var units []unit
	var total Stats
	mods := map[string]int{} // module directory -> index in units
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		total.Files++
		total.Bytes += fi.Size()
		key := moduleDir(root, path)
		if key == "" {
			units = append(units, unit{paths: []string{path}, bytes: fi.Size(), files: 1, mtime: fi.ModTime()})
			return nil
		}
		i, ok := mods[key]
		if !ok {
			i = len(units)
			mods[key] = i
			units = append(units, unit{paths: []string{key}, mtime: fi.ModTime()})
		}
		units[i].bytes += fi.Size()
		units[i].files++
		if fi.ModTime().After(units[i].mtime) {
			units[i].mtime = fi.ModTime()
		}
		return nil
	})
	if err != nil {
		return Stats{}, err
	}
	slices.SortFunc(units, func(a, b unit) int { return a.mtime.Compare(b.mtime) })
	for _, u := range units {
		if total.Bytes <= keep {
			break
		}
		for _, p := range u.paths {
			if err := RemoveAll(p); err != nil {
				return Stats{}, err
			}
		}
		total.Bytes -= u.bytes
		total.Files -= u.files
	}
	return total, nil
}

// moduleDir is the module directory of Go's module cache a file belongs
// to (go-mod/<path>@<version>), "" for a file of no module.
func moduleDir(root, path string) string {
	rel, err := filepath.Rel(filepath.Join(root, "go-mod"), path)
	if err != nil || !filepath.IsLocal(rel) || strings.HasPrefix(rel, "cache"+string(filepath.Separator)) {
		return ""
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for i, p := range parts[:len(parts)-1] {
		if strings.Contains(p, "@") {
			return filepath.Join(append([]string{root, "go-mod"}, parts[:i+1]...)...)
		}
	}
	return ""
}

// bound removes whole lines, least recently committed first, until the
// store holds at most its bound; the line just committed (keep) stays.
func (s *Store) bound(keep string) {
	entries, _ := os.ReadDir(filepath.Join(s.root, "lines"))
	type line struct {
		name  string
		bytes int64
		when  time.Time
	}
	var lines []line
	var sum int64
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		layers, why := readLine(filepath.Join(s.root, "lines", e.Name()))
		if why != "" || len(layers) == 0 {
			continue // a damaged line is removed at its next checkout
		}
		fi, err := os.Stat(filepath.Join(layers[len(layers)-1].path, marker))
		if err != nil {
			continue
		}
		st := total(layers)
		sum += st.Bytes
		if e.Name() != keep {
			lines = append(lines, line{e.Name(), st.Bytes, fi.ModTime()})
		}
	}
	slices.SortFunc(lines, func(a, b line) int { return a.when.Compare(b.when) })
	for _, l := range lines {
		if sum <= s.maxBytes {
			return
		}
		if unlock, err := s.lock(l.name); err == nil {
			s.retire(l.name, filepath.Join(s.root, "lines", l.name))
			unlock()
			sum -= l.bytes
		}
	}
}
