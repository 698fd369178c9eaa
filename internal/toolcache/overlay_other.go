//go:build !linux

package toolcache

import "errors"

func mountOverlay(at string, lower []string, upper, work string) error {
	return errors.New("overlays need Linux")
}

func unmount(path string) error { return errors.New("overlays need Linux") }

func (s *Store) probeOverlay() string { return "overlays need Linux" }

func unmountUnder(dir string) {}

func dropOverlayAttrs(path string) {}
