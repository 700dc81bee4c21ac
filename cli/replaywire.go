package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/wire"
	"github.com/turnlog/turnlog/replay"
)

// printWire writes the request body model call inf sent, rendered again
// from the log, when it hashes to what the call recorded; otherwise it
// writes nothing and fails (exit 1) naming the call and both hashes, since
// a body that is not the one sent must not pass for it.
func printWire(ctx context.Context, out io.Writer, conv string, inf *replay.Inference) error {
	call := fmt.Sprintf("%s model call #%d (event %d)", conv, inf.Index, inf.N)
	if inf.WireSHA256 == "" {
		return fmt.Errorf("%s recorded no wire request: the call failed before sending one, never closed (a crash), or was recorded by a turnlog before wire hashes", call)
	}
	if inf.Turn == nil {
		return fmt.Errorf("%s: its input cannot be rebuilt from the log (see replay --verify), so its request cannot be rendered again", call)
	}
	body, _, err := wire.New(nil).RenderWire(ctx, inf.Wire(), inf.Turn)
	if errors.Is(err, engine.ErrUnknownRendering) {
		return fmt.Errorf("%s: %w", call, err)
	}
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("%s: recorded wire_sha256 %s (rendering %s), but the request cannot be rendered again: %w",
			call, inf.WireSHA256, inf.WireVersion, err)}
	}
	if got := replay.WireSHA256(body); got != inf.WireSHA256 {
		return &exitError{code: 1, err: fmt.Errorf("%s: the request rendered again hashes to %s, the call recorded %s (rendering %s): "+
			"this turnlog renders it differently from the one that sent it, or the log was altered", call, got, inf.WireSHA256, inf.WireVersion)}
	}
	_, err = out.Write(body)
	return err
}

// noteWire adds to inf what became of its blocks in the request, when the
// call recorded one this turnlog can render; without, the Turn is shown as
// it is, which is all the log proves.
func noteWire(ctx context.Context, inf *replay.Inference) {
	if inf.WireSHA256 == "" || inf.Turn == nil {
		return
	}
	r := wire.New(nil)
	if !r.Knows(inf.WireVersion) {
		return
	}
	if _, notes, err := r.RenderWire(ctx, inf.Wire(), inf.Turn); err == nil {
		inf.WireNotes = notes
	}
}
