package middlewares

// This file holds the check that a request's working directory lies where
// the worker's operator allows the template's variables to read.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/turnlog/turnlog/middlewares/template"
)

// ErrCwdOutsideRoots is the error of a request whose "cwd" data names a
// directory outside TemplatePromptConfig.CwdRoots: its file: and git:
// variables would read where the operator did not allow.
var ErrCwdOutsideRoots = errors.New("the request's cwd is outside the directories this worker's template variables may read")

// ProfileCwdRoots names the profile setting (and the worker flag) that
// lists the allowed directories, for ErrCwdOutsideRoots's message.
const ProfileCwdRoots = "cwd_roots (worker flag --cwd-root)"

// CheckCwd reports ErrCwdOutsideRoots unless cwd, with its symbolic links
// resolved, is one of roots or lies below one. A cwd that does not exist
// is checked as written (its variables then find nothing anyway). The
// worker checks a request's cwd with it, and the HTTP API the cwd of a
// template preview, so that neither reads where the other may not.
func CheckCwd(cwd string, roots []string) error {
	real := resolvedPath(cwd)
	for _, root := range roots {
		if template.Within(real, resolvedPath(root)) {
			return nil
		}
	}
	return fmt.Errorf("%w: %q is not under %s; send a cwd under one of them, or add its directory to the profile's %s",
		ErrCwdOutsideRoots, cwd, strings.Join(roots, ", "), ProfileCwdRoots)
}

// refuseCwd resolves a template's variables as template.Resolve does,
// unless one of them reads the working directory (file:, git:,
// prompt:cwd): then it fails with err. A template that reads no file is
// rendered whatever the request's cwd.
func refuseCwd(err error) template.ResolveFunc {
	return func(ctx context.Context, refs []template.Ref, env template.Env) (template.Values, error) {
		if ReadsCwd(refs) {
			return nil, err
		}
		return template.Resolve(ctx, refs, env)
	}
}

// ReadsCwd reports whether any of refs depends on the working directory
// (file:, git:, prompt:cwd), which CheckCwd must then allow.
func ReadsCwd(refs []template.Ref) bool {
	for _, ref := range refs {
		if ref.Type == "file" || ref.Type == "git" || (ref.Type == "prompt" && ref.Name == "cwd") {
			return true
		}
	}
	return false
}

// resolvedPath is path cleaned, with its symbolic links resolved when it
// exists.
func resolvedPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return filepath.Clean(path)
}
