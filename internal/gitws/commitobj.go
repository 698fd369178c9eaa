package gitws

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// A merge commit of the queue used to be a `git commit-tree` of its own (a
// process and a control group, about 5 ms of a merge's 100: SPEC 41). In a
// scratch the worker made (ScratchFrom), whose object store nothing but the
// worker's git has written, the worker writes the same object itself.

// commitObject is the body of the commit object `git commit-tree` writes
// for tree, parents and message with name <email> as author and committer
// at when: git's own format, byte for byte.
func commitObject(tree string, parents []string, name, email string, when time.Time, message string) []byte {
	var b bytes.Buffer
	b.WriteString("tree " + tree + "\n")
	for _, p := range parents {
		b.WriteString("parent " + p + "\n")
	}
	stamp := strconv.FormatInt(when.Unix(), 10) + " " + when.Format("-0700")
	b.WriteString("author " + name + " <" + email + "> " + stamp + "\n")
	b.WriteString("committer " + name + " <" + email + "> " + stamp + "\n\n")
	b.WriteString(message)
	return b.Bytes()
}

// plainIdent: git writes s into an ident as it is. It trims "crud" from
// the ends (control characters, spaces and punctuation, '.' among them):
// s must begin and end with a letter or a digit (or a byte of a non-ASCII
// character) and hold no control character, '<' or '>'.
func plainIdent(s string) bool {
	word := func(c byte) bool {
		return c >= 0x80 || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	if s == "" || !word(s[0]) || !word(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == '<' || s[i] == '>' || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// writeCommit writes the commit of tree with parents as a loose object of
// the scratch dir's repository and returns its id; ok is false when this
// is not one to write in (not a scratch of the worker's, an ident git would
// rewrite, an id that is not SHA-1), for git to write it instead.
func (g *Git) writeCommit(dir, tree, message string, parents []string) (id string, ok bool, err error) {
	if g.scratches == nil || !plainIdent(g.authorName) || !plainIdent(g.authorEmail) || len(tree) != 40 || !isObjectID(tree) {
		return "", false, nil
	}
	if _, mine := g.scratches.Load(dir); !mine {
		return "", false, nil
	}
	for _, p := range parents {
		if len(p) != 40 || !isObjectID(p) {
			return "", false, nil
		}
	}
	body := commitObject(tree, parents, g.authorName, g.authorEmail, time.Now(), message)
	obj := append([]byte("commit "+strconv.Itoa(len(body))+"\x00"), body...)
	sum := sha1.Sum(obj)
	id = hex.EncodeToString(sum[:])
	if err := writeLoose(filepath.Join(dir, ".git"), id, obj); err != nil {
		return "", true, fmt.Errorf("write a commit: %w", err)
	}
	return id, true, nil
}

// writeLoose stores obj (header and body) as the loose object id under
// gitDir/objects, as git does: compressed, written aside, renamed into
// place, read-only. Paths are resolved inside gitDir (os.Root): no link
// leads the write out of it.
func writeLoose(gitDir, id string, obj []byte) error {
	root, err := os.OpenRoot(gitDir)
	if err != nil {
		return err
	}
	defer root.Close()
	sub := filepath.Join("objects", id[:2])
	if err := root.Mkdir(sub, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	name := filepath.Join(sub, id[2:])
	if _, err := root.Lstat(name); err == nil {
		return nil // the same bytes: git keeps the first copy
	}
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	if _, err := w.Write(obj); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	tmp := filepath.Join(sub, "tmp_obj_ralph_"+randomSuffix())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	_, werr := f.Write(z.Bytes())
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	if err := root.Rename(tmp, name); err != nil {
		_ = root.Remove(tmp)
		return err
	}
	return nil
}
