package replay

import (
	"fmt"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// verifyGatewayCall checks a call the recording gateway recorded: its
// input, rendered again from the Turn and the parameters in the Turn's
// data (calls.Render), must hash to the canonical hash of what the client
// sent. It returns why not ("" when it does) and the number of blocks the
// input had (-1 when unknown). A call whose body could not be read
// (gateway "unparsed") recorded only its wire hash: there is nothing to
// render, and nothing is claimed.
func verifyGatewayCall(t *projector.Turn, p events.InferenceStarted) (string, int) {
	if p.Gateway["unparsed"] != "" {
		return "", p.Blocks
	}
	api, err := calls.ParseAPI(p.Gateway["api"])
	if err != nil {
		return "cannot be checked: " + err.Error(), -1
	}
	blocks := t.Blocks
	if len(p.InputBlocks) > 0 {
		blocks = make([]events.Block, 0, len(p.InputBlocks))
		for _, id := range p.InputBlocks {
			b, ok := t.Block(id)
			if !ok {
				return fmt.Sprintf("its input names block %s, which the log does not hold at that point", id), -1
			}
			blocks = append(blocks, b)
		}
	}
	h, err := calls.RenderHash(api, blocks, t.Data, p.Gateway["params"])
	if err != nil {
		return "its input cannot be rendered from the log: " + err.Error(), len(blocks)
	}
	if h != p.InputHash {
		return fmt.Sprintf("recorded input hash %s, but the log renders to %s: the request the client sent is not what the log says", short(p.InputHash), short(h)), len(blocks)
	}
	return "", len(blocks)
}

// inputVerified reports whether input, the input a model call received as
// the log rebuilds it (nil: the log cannot), proves the hash p recorded:
// the Turn's hash, or for a gateway call the request's canonical hash,
// rendered again (verifyGatewayCall). Every view of a call (the timeline,
// the calls view) says what replay --verify would.
func inputVerified(t, input *projector.Turn, p events.InferenceStarted) bool {
	switch {
	case input == nil:
		return false
	case p.Gateway != nil:
		why, _ := verifyGatewayCall(t, p)
		return why == ""
	default:
		return projector.HashMatches(input, p.InputHash)
	}
}
