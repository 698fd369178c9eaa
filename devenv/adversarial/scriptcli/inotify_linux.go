package scriptcli

import (
	"fmt"
	"syscall"
	"unsafe"
)

// watchReads signals each time a reader closes path (IN_CLOSE_NOWRITE).
func watchReads(path string) (<-chan struct{}, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, path, syscall.IN_CLOSE_NOWRITE); err != nil {
		return nil, fmt.Errorf("inotify %s: %w", path, err)
	}
	ch := make(chan struct{}, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := syscall.Read(fd, buf)
			if err != nil {
				close(ch)
				return
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				ch <- struct{}{}
				off += syscall.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}()
	return ch, nil
}
