package worker

import (
	"context"

	"github.com/turnlog/turnlog/profile"
)

// profileKey is the context key of the profile a request runs with.
type profileKey struct{}

// withProfile returns ctx carrying the name of the profile the request in
// hand runs with, from the moment the worker chose it: every way the
// request can end (request.completed, and request.failed from any of its
// many paths) then names it, for replay --rerun.
func withProfile(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, profileKey{}, name)
}

// profileOf is the profile name withProfile put in ctx, "" if none.
func profileOf(ctx context.Context) string {
	name, _ := ctx.Value(profileKey{}).(string)
	return name
}

// servingProfile is the name of the profile req runs with (the default
// one when it names none), and whether w has it.
func (w *Worker) servingProfile(req Request) (string, bool) {
	name := req.Profile
	if name == "" {
		name = profile.DefaultName
	}
	_, ok := w.profiles[name]
	return name, ok
}
