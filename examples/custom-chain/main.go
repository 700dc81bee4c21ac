// Command custom-chain is the turnlog command with a chain of your own: a
// middleware registered as example.sysprompt and an engine registered as
// example.echo, in every command (serve, worker, chat, replay --rerun,
// ...), as profiles.yaml beside it names them.
//
//	go build -o custom-chain ./examples/custom-chain
//	./custom-chain serve --profiles examples/custom-chain/profiles.yaml
//	./custom-chain chat -m hello demo
//	./custom-chain replay --inference 1 --wire demo
//	./custom-chain replay --rerun --profiles examples/custom-chain/profiles.yaml demo
//
// A stock turnlog binary has neither name, and says so when a profile
// uses one. See docs/library.md.
package main

import (
	"github.com/turnlog/turnlog/cli"
	"github.com/turnlog/turnlog/profile"
)

// Registration happens in init, before cli.Main reads any profile. The
// names carry a prefix of their own ("example."), so they can never
// collide with turnlog's. The engine registers the rendering of the
// requests it records with it, for `replay --inference N --wire` and
// `replay --verify`.
func init() {
	profile.RegisterMiddleware("example.sysprompt", newSysprompt)
	profile.RegisterEngine("example.echo", newEcho, profile.WithWire(echoWire, renderEchoWire))
}

func main() { cli.Main() }
