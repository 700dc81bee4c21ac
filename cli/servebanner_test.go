package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/turnlog/turnlog/profile"
)

// TestBannerDoesNotGuessAnEnginesModel: serve's banner said "model none
// set (a request must name one)" for an engine of the program's own that
// takes its model from its options, whose requests need none. A model is
// said to be missing only when the engine told its defaults.
func TestBannerDoesNotGuessAnEnginesModel(t *testing.T) {
	assert.Equal(t, "provider acme.gpt, model the engine's choice (the profile sets none)",
		describeAnswerer(profile.Summary{Provider: "acme.gpt"}))
	assert.Equal(t, "provider openai, model none set (a request must name one) at https://api.openai.com/v1",
		describeAnswerer(profile.Summary{Provider: "openai", BaseURL: "https://api.openai.com/v1", Described: true}))
	assert.Equal(t, "provider acme.gpt, model m1", describeAnswerer(profile.Summary{Provider: "acme.gpt", Model: "m1"}))
}
