package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/wire"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// printWire writes the request body the model call of e (its
// inference.started) sent, rendered again from the log, when it hashes to
// what the call recorded; otherwise it writes nothing and fails (exit 1)
// naming the call and both hashes, since a body that is not the one sent
// must not pass for it. An app's call through the gateway is printed in
// canonical form (printGatewayRequest).
func printWire(ctx context.Context, out, errOut io.Writer, conv string, e *replay.Entry) error {
	inf := e.Inference
	call := fmt.Sprintf("%s model call #%d (event %d)", conv, inf.Index, inf.N)
	if inf.Gateway != nil {
		return printGatewayRequest(out, errOut, call, e)
	}
	if inf.WireSHA256 == "" {
		return fmt.Errorf("%s recorded no wire request: its engine records none (an engine of your own calls engine.DescribeWire "+
			"and registers its rendering with profile.WithWire: see docs/library.md), the call failed before sending one, "+
			"never closed (a crash), or was recorded by a turnlog before wire hashes", call)
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
// forwarded for an app, as the log holds it (replay.GatewayRequest):
// canonical JSON, when it hashes to the call's input hash; otherwise
// nothing, and exit 1. The app's own bytes (their layout: white space,
// member order) are not in the log, only their SHA-256, which a note on
// errOut names.
func printGatewayRequest(out, errOut io.Writer, call string, e *replay.Entry) error {
	started, _ := e.Payload.(events.InferenceStarted)
	rec := &replay.CallRecord{Call: e.Inference.Index, N: e.N, Started: started, Input: e.Inference.Turn}
	body, matches, _, err := replay.GatewayRequest(rec)
	switch {
	case err != nil:
		return fmt.Errorf("%s was an app's call through the recording gateway, but %w (the app's bytes: SHA-256 %s)", call, err, started.Gateway["wire_sha256"])
	case !matches:
		return &exitError{code: 1, err: fmt.Errorf("%s: the request rendered again does not hash to the call's input hash %s: "+
			"this turnlog renders it differently from the gateway that recorded it, or the log was altered", call, started.InputHash)}
	}
	if _, err := out.Write(body); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "turnlog: %s was an app's call through the recording gateway: this is its request as canonical JSON (RFC 8785), "+
		"which hashes to its input hash %s; the app sent the same JSON in its own layout (SHA-256 %s), which the log does not keep\n",
		call, started.InputHash, started.Gateway["wire_sha256"])
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
