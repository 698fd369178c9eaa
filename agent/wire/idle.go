package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// errModelIdle is the cause of a streamed call that went IdleTimeout without
// a byte: a stalled provider or a gateway holding a dead connection. It is
// transient, like a dropped connection.
var errModelIdle = errors.New("model stream idle")

// idleWatch aborts one streamed HTTP exchange when no byte arrives for
// limit: waiting for the response headers counts, and so does every gap
// between reads of the body.
type idleWatch struct {
	limit  time.Duration
	cancel context.CancelCauseFunc
	ctx    context.Context

	mu    sync.Mutex
	timer *time.Timer
}

// watchIdle gives req a context that the watch cancels on idleness.
func watchIdle(req *http.Request, limit time.Duration) (*http.Request, *idleWatch) {
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &idleWatch{limit: limit, cancel: cancel, ctx: ctx}
	w.timer = time.AfterFunc(limit, func() { cancel(errModelIdle) })
	return req.WithContext(ctx), w
}

// moved restarts the idle clock: bytes arrived.
func (w *idleWatch) moved() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer.Reset(w.limit)
}

// stop ends the watch (the exchange is over).
func (w *idleWatch) stop() {
	w.timer.Stop()
	w.cancel(nil)
}

// explain turns an error of the exchange into errModelIdle when idleness
// caused it.
func (w *idleWatch) explain(err error) error {
	if err != nil && errors.Is(context.Cause(w.ctx), errModelIdle) {
		return fmt.Errorf("%w: no byte from the provider for %s", errModelIdle, w.limit)
	}
	return err
}

// idleBody is a streamed response body under an idle watch.
type idleBody struct {
	body  io.ReadCloser
	watch *idleWatch
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.watch.moved()
	}
	return n, b.watch.explain(err)
}

func (b *idleBody) Close() error {
	err := b.body.Close()
	b.watch.stop()
	return err
}
