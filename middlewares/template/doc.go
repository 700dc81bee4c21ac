// Package template is the system-prompt template language: a small,
// never-failing text language with variables and conditionals, plus the
// resolvers that give the variables their values.
//
// Parsing and rendering ([Parse], [Template.Render]) are pure: no clock, no
// file system, no processes. Values come from a [Lookup], usually the
// [Values] returned by [Resolve], which does the I/O (git, files, hostname)
// in parallel under one deadline. [RenderWith] does all three steps.
//
// # Language
//
// A variable is written [type:name]. The type is one or more lowercase
// letters a-z; the name is any non-empty run of characters other than ']'
// and newline, so [file:docs/a b.md] names the file "docs/a b.md". A
// variable is replaced by its value. A variable that does not exist, or whose
// type is unknown, renders as the empty string.
//
// Conditionals:
//
//	[if type:name] shown when the variable is set [else] shown otherwise [endif]
//	[if !type:name] shown when the variable is not set [endif]
//
// A condition is true when the variable exists AND its value is not empty
// after trimming white space; so a clean working tree (empty git:status) or
// an empty file counts as "not set". [if] blocks nest; the [else] part is
// optional; content may span lines. [else] belongs to the innermost open
// [if].
//
// The language has no errors. Anything else in brackets is literal text and
// is kept as is: [note], [ x ], [1], JSON arrays, [if] with a malformed
// condition. Unmatched tags are literal too:
//
//   - an [if] with no matching [endif] is kept as text, and so is the
//     [else] bound to it; only the tag itself is literal, what follows it is
//     rendered normally, variables included. "a [if x:y] [system:os]"
//     renders as "a [if x:y] linux".
//   - a stray [endif], or an [else] outside any [if] or after the first
//     [else] of the same [if], is kept as text.
//
// There is no escape syntax: a literal "[system:os]" cannot be written,
// which has not been needed for prompts.
//
// # No system prompt
//
// A template that renders to the empty string or to white space only means
// "no system prompt at all": [Template.Render] and [RenderWith] then return
// ok == false and an empty prompt.
//
// # Example
//
// With git:branch = "main" and a clean working tree, the template
//
//	You are helping in [prompt:cwd] on branch [git:branch].
//	[if git:status]Uncommitted changes:
//	[git:status]
//	[else]The working tree is clean.[endif]
//	[if file:AGENTS.md]Project notes:
//	[file:AGENTS.md][endif]
//
// renders the first line with the values substituted, then "The working
// tree is clean.", then the project notes only if AGENTS.md exists in the
// working directory and is not blank.
//
// # Variables
//
// [Catalog] lists the variables the resolvers know: system:time,
// system:date, system:os, system:hostname, prompt:cwd, prompt:model,
// prompt:conversation_id, git:branch, git:status and file:<path>. A file
// path is relative to the conversation's working directory and can never
// reach outside it, nor into /proc, /sys or /dev (see [Resolve]).
//
// # Limits
//
// A file: value (and git:status) is cut at [Env.MaxFileBytes] (default
// 64 KiB) and then ends with a truncation note. The rendered prompt, and
// the values of the variables a template names, are capped at
// [Env.MaxPromptBytes] (default 256 KiB): [RenderWith] stops there with a
// [*LimitError] naming the cap and the variable, so memory stays within a
// small multiple of the cap whatever the template.
package template
