package scripted

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTemplateExpand(t *testing.T) {
	groups := []string{"count words in a \"b\"", `a "b"`}
	for _, c := range []struct{ tmpl, result, want string }{
		{"plain text", "", "plain text"},
		{"", "", ""},
		{"You said: $0", "", `You said: count words in a "b"`},
		{`{"text": $1json}`, "", `{"text": "a \"b\""}`},
		{"$1$1", "", `a "b"a "b"`},
		{"$10", "", `a "b"0`}, // one digit only, as before
		{"$9 is missing", "", " is missing"},
		{"costs $", "", "costs $"},
		{"$x stays", "", "$x stays"},
		{"There are {{result}} words in \"$1\".", "2", `There are 2 words in "a "b"".`},
		{"{{result}}{{result}}", "7", "77"},
		{"{{resul", "7", "{{resul"},
	} {
		assert.Equal(t, c.want, compileTemplate(c.tmpl).expand(groups, c.result), "template %q", c.tmpl)
	}
}

// TestTemplateDoesNotExpandWhatItInserts checks that a user's message
// that contains a reference is inserted as it is: the reply template is
// the script's, the message is data.
func TestTemplateDoesNotExpandWhatItInserts(t *testing.T) {
	got := compileTemplate("echo: $0 / {{result}}").expand([]string{"$1 and {{result}}", "GROUP"}, "RESULT")
	assert.Equal(t, "echo: $1 and {{result}} / RESULT", got)
}
