package profile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/turnlog/turnlog/profile"
)

// TestSummarySaysWhoAnswers: a profile's summary is what its engine will
// use: the profile's keys over the provider's environment variables, the
// providers' default endpoints otherwise, and never a password.
func TestSummarySaysWhoAnswers(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
	t.Setenv("OPENAI_MODEL", "llama3.2")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	t.Setenv("ANTHROPIC_MODEL", "")
	cases := []struct {
		name string
		p    profile.Profile
		want profile.Summary
	}{
		{"scripted by default", profile.Profile{}, profile.Summary{Provider: "scripted", Model: "scripted"}},
		{"openai from the environment", profile.Profile{Provider: "openai"},
			profile.Summary{Provider: "openai", Model: "llama3.2", BaseURL: "http://127.0.0.1:11434/v1"}},
		{"the profile's keys win", profile.Profile{Provider: "openai_responses", Model: "gpt-5", BaseURL: "https://example.test/v1"},
			profile.Summary{Provider: "openai_responses", Model: "gpt-5", BaseURL: "https://example.test/v1"}},
		{"anthropic's default endpoint, no model", profile.Profile{Provider: "anthropic"},
			profile.Summary{Provider: "anthropic", BaseURL: "https://api.anthropic.com"}},
		{"no password shown", profile.Profile{Provider: "openai", BaseURL: "http://me:secret@127.0.0.1:8000/v1"},
			profile.Summary{Provider: "openai", Model: "llama3.2", BaseURL: "http://me:xxxxx@127.0.0.1:8000/v1"}},
		// A user without a password is a token written as the user
		// (https://TOKEN@proxy/v1, which Go's client sends as basic
		// auth): the status ping carries summaries to every client key.
		{"no token as the user shown", profile.Profile{Provider: "openai", BaseURL: "https://sk-live-secret@proxy.example/v1"},
			profile.Summary{Provider: "openai", Model: "llama3.2", BaseURL: "https://xxxxx@proxy.example/v1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Name, tc.want.Described = "p", true // turnlog's engines tell their defaults
			assert.Equal(t, tc.want, tc.p.Summary("p"))
		})
	}
}
