package templates_test

import (
	"context"
	"github.com/nats-io/nats.go"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/middlewares/template"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/templates"
)

// The store is the template source of the template middleware.
var _ middlewares.TemplateSource = (*templates.Store)(nil)

func openStore(t *testing.T) (*templates.Store, *eventlog.Log) {
	t.Helper()
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	return templates.New(l), l
}

func TestGlobalDefaultWhenUnset(t *testing.T) {
	s, _ := openStore(t)
	g, err := s.Global(context.Background())
	require.NoError(t, err)
	assert.True(t, g.Default)
	assert.Equal(t, templates.Default, g.Text)
	assert.Zero(t, g.Revision)

	text, err := s.Template(context.Background())
	require.NoError(t, err)
	assert.Equal(t, templates.Default, text)
}

func TestSetGetRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, l := openStore(t)
	tests := []struct {
		name string
		text string
	}{
		{name: "plain", text: "Be brief."},
		{name: "variables and conditionals, multi-line", text: "Today is [system:date].\n[if git:branch]On [git:branch].[else]No git.[endif]\n"},
		{name: "empty means no system prompt", text: ""},
		{name: "unicode", text: "Réponds en français. 日本語も"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set, err := s.SetGlobal(ctx, tc.text)
			require.NoError(t, err)
			assert.False(t, set.Default)
			assert.NotZero(t, set.Revision)

			got, err := s.Global(ctx)
			require.NoError(t, err)
			assert.Equal(t, tc.text, got.Text)
			assert.False(t, got.Default, "an empty template is a template, not the default")
			assert.Equal(t, set.Revision, got.Revision)

			// Another store on the same log (another process) sees it.
			other, err := templates.New(l).Template(ctx)
			require.NoError(t, err)
			assert.Equal(t, tc.text, other)
		})
	}
}

func TestResetGlobal(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	require.NoError(t, s.ResetGlobal(ctx), "resetting an unset template is harmless")
	_, err := s.SetGlobal(ctx, "custom")
	require.NoError(t, err)
	require.NoError(t, s.ResetGlobal(ctx))
	g, err := s.Global(ctx)
	require.NoError(t, err)
	assert.True(t, g.Default)
	assert.Equal(t, templates.Default, g.Text)
}

func TestTemplateByHashFindsReplacedTemplates(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	_, err := s.SetGlobal(ctx, "first [system:os]")
	require.NoError(t, err)
	_, err = s.SetGlobal(ctx, "second")
	require.NoError(t, err)

	tests := []struct {
		name   string
		hash   string
		want   string
		wantOK bool
	}{
		{name: "a replaced template", hash: projector.HashText("first [system:os]"), want: "first [system:os]", wantOK: true},
		{name: "the current one", hash: projector.HashText("second"), want: "second", wantOK: true},
		{name: "the built-in default", hash: projector.HashText(templates.Default), want: templates.Default, wantOK: true},
		{name: "never stored", hash: projector.HashText("never"), wantOK: false},
		{name: "not a hash", hash: "global", wantOK: false},
		{name: "a key pattern", hash: strings.Repeat("a", 63) + ">", wantOK: false},
		{name: "empty", hash: "", wantOK: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := s.TemplateByHash(ctx, tc.hash)
			require.NoError(t, err)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSetGlobalRefusesInvalid(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	tests := []struct {
		name string
		text string
		want string
	}{
		{name: "too large", text: strings.Repeat("x", templates.MaxBytes+1), want: "the limit is"},
		{name: "not UTF-8", text: "ok \xff\xfe", want: "not valid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.SetGlobal(ctx, tc.text)
			require.ErrorIs(t, err, templates.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	g, err := s.Global(ctx)
	require.NoError(t, err)
	assert.True(t, g.Default, "a refused template must not be stored")
}

func TestDefaultRendersToOneLineWithoutContext(t *testing.T) {
	prompt, _, ok, err := template.RenderWith(context.Background(), templates.Default, template.Env{})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "You are a helpful assistant.", prompt)
}

func TestDefaultIncludesAgentsAndCwd(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "AGENTS.md", "Run make test before committing.")
	prompt, used, ok, err := template.RenderWith(context.Background(), templates.Default, template.Env{Cwd: dir})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "You are a helpful assistant.\n\nProject instructions (from AGENTS.md):\n\nRun make test before committing.\n\nWorking directory: "+dir, prompt)
	assert.Equal(t, template.Values{"file:AGENTS.md": "Run make test before committing.", "prompt:cwd": dir}, used)
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
}

// TestARollupCannotWipeTheTemplates: a message with the Nats-Rollup
// header (a direct get's copy of a purged key's marker keeps it) stored
// under a template's key deleted every earlier value of it: a client
// aimed one at global, and the template and its history were gone (found
// by the security re-probe). The bucket refuses rollups.
func TestARollupCannotWipeTheTemplates(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	store := templates.New(l)
	_, err = store.SetGlobal(ctx, "You are Acme's assistant.")
	require.NoError(t, err)
	m := nats.NewMsg("$KV." + l.Names().TemplatesBucket + ".global")
	m.Header.Set("Nats-Rollup", "sub")
	m.Header.Set("KV-Operation", "PURGE")
	_, err = l.JetStream().PublishMsg(ctx, m)
	require.Error(t, err, "the bucket refuses a rollup")
	g, err := store.Global(ctx)
	require.NoError(t, err)
	assert.Equal(t, "You are Acme's assistant.", g.Text)
}
