package toolcache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// A line is a directory of layers, each a sealed tree of Dirs with its
// marker, named by its sequence number (the newest on top) and a random
// suffix (a rebuilt line's first layer is never taken for an older one
// this worker checked). A layer never changes once added: the overlays
// mounted on it would see undefined things (the kernel's word) if it did.
// Layers go only when no copy reads them (retire).

// maxLayers is how many layers a line stacks before a commit merges them
// into one: each layer is a lookup more in the overlay, and a farm or a
// full copy walks them all.
const maxLayers = 8

// layerName is a layer's directory name: its sequence number, a random
// suffix.
var layerName = regexp.MustCompile(`^(\d{8})-[0-9a-f]{8}$`)

type layer struct {
	path string
	seq  int
	st   Stats // what its marker records
}

// readLine lists the layers of the line at dir, the oldest first; why says
// why the line is damaged ("" when it is not; no directory is an empty
// line). Old lines (the caches directly in the line) are damaged too.
func readLine(dir string) ([]layer, string) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ""
	}
	if err != nil {
		return nil, "read the line: " + err.Error()
	}
	var layers []layer
	for _, e := range entries { // by name: by sequence number
		m := layerName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			return nil, fmt.Sprintf("%s is not a layer", e.Name())
		}
		path := filepath.Join(dir, e.Name())
		st, err := readMarker(path)
		if err != nil {
			return nil, fmt.Sprintf("layer %s: marker: %v", e.Name(), err)
		}
		seq, _ := strconv.Atoi(m[1])
		layers = append(layers, layer{path: path, seq: seq, st: st})
	}
	return layers, ""
}

func total(layers []layer) Stats {
	var st Stats
	for _, l := range layers {
		st.Files += l.st.Files
		st.Bytes += l.st.Bytes
	}
	return st
}

func (l layer) disagrees(got Stats) string {
	return fmt.Sprintf("layer %s holds %d files, %d bytes; its marker says %d files, %d bytes",
		filepath.Base(l.path), got.Files, got.Bytes, l.st.Files, l.st.Bytes)
}

// verifyLayers checks each layer this worker has not checked yet against
// its marker (a walk: it counts plain files and refuses anything else);
// it returns why the line is damaged, "" when it is not.
func (s *Store) verifyLayers(layers []layer) string {
	for _, l := range layers {
		s.mu.Lock()
		done := s.verified[l.path]
		s.mu.Unlock()
		if done {
			continue
		}
		got, err := countTree(l.path)
		if err != nil {
			return fmt.Sprintf("layer %s: %v", filepath.Base(l.path), err)
		}
		if got != l.st {
			return l.disagrees(got)
		}
		s.markVerified(l.path)
	}
	return ""
}

func (s *Store) markVerified(path string) {
	s.mu.Lock()
	s.verified[path] = true
	s.mu.Unlock()
}

// countTree counts the plain files under root but its marker; anything
// but directories and plain files is an error.
func countTree(root string) (Stats, error) {
	var st Stats
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || path == filepath.Join(root, marker) {
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(root, path)
			return fmt.Errorf("%s is not a plain file", rel)
		}
		st.Files++
		st.Bytes += fi.Size()
		return nil
	})
	return st, err
}

// addLayer puts the sealed stage (holding st) on top of the line at dir,
// or in place of all its layers (whole: the stage holds the whole line),
// and returns the line's layers then. The caller holds the line's lock.
func (s *Store) addLayer(line, dir string, stage string, st Stats, whole bool) ([]layer, error) {
	layers, why := readLine(dir)
	if why != "" || whole {
		s.retire(line, dir)
		layers = nil
	}
	if st.Files == 0 && !whole {
		return layers, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("toolcache: %w", err)
	}
	seq := 1
	if len(layers) > 0 {
		seq = layers[len(layers)-1].seq + 1
	}
	top := layer{path: filepath.Join(dir, fmt.Sprintf("%08d-%s", seq, randomHex(4))), seq: seq, st: st}
	if err := os.Rename(stage, top.path); err != nil {
		return nil, fmt.Errorf("toolcache: add the layer: %w", err)
	}
	return append(layers, top), nil
}

// crowded reports whether a line's layers should become one: past
// maxLayers, or over the bound (only merging evicts).
func (s *Store) crowded(layers []layer) bool {
	return len(layers) > maxLayers || total(layers).Bytes > s.maxBytes
}

func (s *Store) startCompacting(line string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.compacting[line] {
		return false
	}
	s.compacting[line] = true
	return true
}

func (s *Store) doneCompacting(line string) {
	s.mu.Lock()
	delete(s.compacting, line)
	s.mu.Unlock()
}

// compact merges the line's layers into one (hard links, the newest
// layer's file where several hold one), evicting the oldest files over
// the bound. The merge is built without the line's lock (layers never
// change), so verifies keep starting meanwhile; under it, the merged layer
// takes the place of the layers it holds, if they are still the line's
// oldest (a commit may have added layers on top; a damaged line's
// rebuild leaves nothing to replace). It returns what the line then holds.
func (s *Store) compact(line, dir string, layers []layer) (Stats, error) {
	stage, _ := s.workDir("compact")
	if err := os.Mkdir(stage, 0o700); err != nil {
		return Stats{}, fmt.Errorf("toolcache: %w", err)
	}
	defer RemoveAll(stage) // a no-op once it is a layer
	for i := len(layers) - 1; i >= 0; i-- {
		if _, err := s.copyTree(layers[i].path, stage, true); err != nil {
			if errors.Is(err, os.ErrNotExist) { // retired meanwhile: nothing to replace
				now, _ := readLine(dir)
				return total(now), nil
			}
			return Stats{}, fmt.Errorf("toolcache: merge the layers: %w", err)
		}
	}
	st, err := countTree(stage)
	if err != nil {
		return Stats{}, err
	}
	if st.Bytes > s.maxBytes {
		if st, err = s.evict(stage, s.maxBytes*3/4); err != nil {
			return Stats{}, err
		}
	}
	if err := writeMarker(stage, st); err != nil {
		return Stats{}, err
	}
	unlock, err := s.lock(line)
	if err != nil {
		return Stats{}, err
	}
	defer unlock()
	now, why := readLine(dir)
	if why != "" || len(now) < len(layers) {
		return total(now), nil
	}
	for i, l := range layers {
		if now[i].path != l.path {
			return total(now), nil
		}
	}
	// The merged layer takes the newest merged layer's number: it sorts
	// below every layer added since, and that layer goes at once.
	top := layers[len(layers)-1]
	merged := layer{path: filepath.Join(dir, fmt.Sprintf("%08d-%s", top.seq, randomHex(4))), seq: top.seq, st: st}
	if err := os.Rename(stage, merged.path); err != nil {
		return Stats{}, fmt.Errorf("toolcache: add the merged layer: %w", err)
	}
	s.markVerified(merged.path) // counted just now
	for _, l := range layers {
		s.retireLayer(line, l.path)
	}
	s.dropRetired(line)
	return total(append([]layer{merged}, now[len(layers):]...)), nil
}

// retire takes the whole line at dir out of the store's lines: its layers
// go once no copy reads them.
func (s *Store) retire(line, dir string) {
	s.retireLayer(line, dir)
	s.dropRetired(line)
}

func (s *Store) retireLayer(line, path string) {
	to := filepath.Join(s.root, "work", "retired-"+randomHex(8)+"-"+line)
	if err := os.Rename(path, to); err != nil && !errors.Is(err, os.ErrNotExist) {
		_ = RemoveAll(path) // nothing else takes it out of the line
	}
}

// retiredLine is the line a retired layer's name (retired-<random>-<line>)
// is of, "" when name is not one.
func retiredLine(name string) string {
	rest, ok := strings.CutPrefix(name, "retired-")
	if !ok || len(rest) < 18 || rest[16] != '-' {
		return ""
	}
	return rest[17:]
}

// readers is the lock file every overlay of line holds shared while it is
// mounted.
func readers(line string) string { return line + ".readers" }

// dropRetired removes line's retired layers when no overlay of the line is
// mounted; otherwise the last one's release does. Under the readers lock
// they are only renamed (a mount waits for that lock), then removed.
func (s *Store) dropRetired(line string) {
	f, err := s.flock(readers(line), syscall.LOCK_EX|syscall.LOCK_NB)
	if err != nil {
		return
	}
	work := filepath.Join(s.root, "work")
	entries, _ := os.ReadDir(work)
	var trash []string
	for _, e := range entries {
		if retiredLine(e.Name()) == line {
			to := filepath.Join(work, "trash-"+randomHex(8))
			if os.Rename(filepath.Join(work, e.Name()), to) == nil {
				trash = append(trash, to)
			}
		}
	}
	f.Close()
	for _, t := range trash {
		_ = RemoveAll(t)
	}
}
