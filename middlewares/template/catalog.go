package template

// Variable describes one variable a template can use. It exists so clients
// (the HTTP API serves the catalog as {"variables": [...]}) can offer the
// variables to the user without hard-coding the list.
type Variable struct {
	// Ref is the variable as written in a template without its brackets,
	// e.g. "system:time". For a dynamic variable the name part is a
	// placeholder in angle brackets, e.g. "file:<path>".
	Ref string `json:"name"`
	// Description says what the value is, for a human.
	Description string `json:"description"`
	// Dynamic is true when the name part is chosen by the user (file:<path>)
	// rather than fixed.
	Dynamic bool `json:"dynamic"`
}

// Catalog returns every variable [Resolve] knows, in a stable order. Each
// call returns a new slice, so callers may modify it.
func Catalog() []Variable {
	return []Variable{
		{Ref: "system:time", Description: "Current date and time, RFC 3339 (e.g. 2025-01-02T15:04:05+01:00)."},
		{Ref: "system:date", Description: "Current date, YYYY-MM-DD."},
		{Ref: "system:os", Description: "Operating system of the server (Go's GOOS, e.g. linux, darwin, windows)."},
		{Ref: "system:hostname", Description: "Host name of the server."},
		{Ref: "prompt:cwd", Description: "Working directory of the conversation."},
		{Ref: "prompt:model", Description: "Model the conversation uses."},
		{Ref: "prompt:conversation_id", Description: "ID of the conversation."},
		{Ref: "git:branch", Description: "Current git branch in the working directory (git rev-parse --abbrev-ref HEAD); not set outside a git repository."},
		{Ref: "git:status", Description: "Output of git status --porcelain in the working directory; empty when the tree is clean, not set outside a git repository."},
		{Ref: "file:<path>", Description: "Contents of the file at <path>, relative to the working directory, cut at 64 KiB by default with a truncation note; not set if the file is missing, not a regular file, outside the working directory, or under /proc, /sys or /dev.", Dynamic: true},
	}
}
