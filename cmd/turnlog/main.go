// Command turnlog is the stock turnlog binary: every command of package
// cli with the built-in engines and middlewares. A team that registers its
// own builds the same binary with a main of its own (see docs/library.md).
package main

import "github.com/turnlog/turnlog/cli"

func main() { cli.Main() }
