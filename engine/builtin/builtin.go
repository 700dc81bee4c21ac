// Package builtin links turnlog's own engines into a program: importing
// it for its side effects registers the providers "scripted", "openai",
// "openai_responses" and "anthropic" with package profile, as
// cli.Main's stock command has them.
//
//	import _ "github.com/turnlog/turnlog/engine/builtin"
//
// A program that needs only some of them imports those packages instead
// (engine/scripted, engine/openai, ...), and links only their SDKs.
package builtin

import (
	_ "github.com/turnlog/turnlog/engine/anthropic" // provider "anthropic"
	_ "github.com/turnlog/turnlog/engine/openai"    // provider "openai"
	_ "github.com/turnlog/turnlog/engine/responses" // provider "openai_responses"
	_ "github.com/turnlog/turnlog/engine/scripted"  // provider "scripted"
)
