package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/wire"
	"github.com/turnlog/turnlog/replay"
)

// printWire writes the request body model call inf sent, rendered again
// from the log, when it hashes to what the call recorded; otherwise it
// writes nothing and fails (exit 1) naming the call and both hashes, since
// a body that is not the one sent must not pass for it.
func printWire(ctx context.Context, out, errOut io.Writer, conv string, inf *replay.Inference) error {
	call := fmt.Sprintf("%s model call #%d (event %d)", conv, inf.Index, inf.N)
	if inf.Gateway != nil {
		return printGatewayRequest(out, errOut, call, inf)
	}
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

// printGatewayRequest writes the request of a call the recording gateway
// forwarded for an app, as the log holds it: canonical JSON (RFC 8785),
// rendered again from the Turn, when it hashes to the call's input hash;
// otherwise nothing, and exit 1. The app's own bytes (their layout: white
// space, member order) are not in the log, only their SHA-256, which a
// note on errOut names.
func printGatewayRequest(out, errOut io.Writer, call string, inf *replay.Inference) error {
	g := inf.Gateway
	if why := g["unparsed"]; why != "" {
		return fmt.Errorf("%s: the gateway could not read this call's request (%s), so the log holds only the SHA-256 of the bytes the app sent, %s",
			call, why, g["wire_sha256"])
	}
	if inf.Turn == nil {
		return fmt.Errorf("%s: its input cannot be rebuilt from the log (see replay --verify), so its request cannot be rendered again", call)
	}
	api, err := calls.ParseAPI(g["api"])
	if err != nil {
		return fmt.Errorf("%s: %w", call, err)
	}
	body, err := calls.Render(api, inf.Turn.Blocks, inf.Turn.Data, g["params"])
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("%s: its request cannot be rendered again from the log: %w", call, err)}
	}
	sum := sha256.Sum256(body)
	if got := calls.HashPrefix + hex.EncodeToString(sum[:]); got != inf.InputHash {
		return &exitError{code: 1, err: fmt.Errorf("%s: the request rendered again hashes to %s, the call recorded %s: "+
			"this turnlog renders it differently from the gateway that recorded it, or the log was altered", call, got, inf.InputHash)}
	}
	if _, err := out.Write(body); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "turnlog: %s was an app's call through the recording gateway: this is its request as canonical JSON (RFC 8785), "+
		"which hashes to its input hash %s; the app sent the same JSON in its own layout (SHA-256 %s), which the log does not keep\n",
		call, inf.InputHash, g["wire_sha256"])
	return nil
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
