//go:build !linux

package scriptcli

import "errors"

func watchReads(string) (<-chan struct{}, error) {
	return nil, errors.New("inotify exists only on Linux")
}
