package engine

// Provider is implemented by engines that can name the provider they call
// ("openai", "anthropic"), as the GenAI conventions name providers: a
// model call's trace span says it (gen_ai.provider.name). An engine that
// does not implement it is named "turnlog".
type Provider interface {
	Provider() string
}

// ProviderOf names e's provider, or "turnlog" when e does not say.
func ProviderOf(e Engine) string {
	if p, ok := e.(Provider); ok {
		if name := p.Provider(); name != "" {
			return name
		}
	}
	return "turnlog"
}
