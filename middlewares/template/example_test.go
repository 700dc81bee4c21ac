package template_test

import (
	"fmt"

	"github.com/turnlog/turnlog/middlewares/template"
)

func ExampleTemplate_Render() {
	t := template.Parse("On [git:branch].[if git:status] Uncommitted:\n[git:status][else] Clean tree.[endif] [note] stays.")
	fmt.Println(t.Variables())

	prompt, ok := t.Render(template.Values{"git:branch": "main", "git:status": ""})
	fmt.Printf("%q %v\n", prompt, ok)

	prompt, ok = template.Parse(" [if !git:branch]\n[endif] ").Render(template.Values{"git:branch": "main"})
	fmt.Printf("%q %v\n", prompt, ok)
	// Output:
	// [git:branch git:status]
	// "On main. Clean tree. [note] stays." true
	// "" false
}
