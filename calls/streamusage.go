package calls

// messageDeltaUsage is the usage a Messages stream's message_delta
// carries: cumulative totals of the whole message, each present only
// when it applies. Its output count is the answer's; its input counts,
// when present, replace message_start's: a server tool's results (a web
// search's pages) are input the model read after the stream began.
type messageDeltaUsage struct {
	InputTokens         *int `json:"input_tokens"`
	OutputTokens        int  `json:"output_tokens"`
	CacheCreationTokens *int `json:"cache_creation_input_tokens"`
	CacheReadTokens     *int `json:"cache_read_input_tokens"`
}

// apply takes the counts d carries over those of u.
func (d *messageDeltaUsage) apply(u *usage) {
	if d == nil {
		return
	}
	for _, c := range []struct {
		from *int
		to   *int
	}{{d.InputTokens, &u.InputTokens}, {d.CacheCreationTokens, &u.CacheCreationTokens}, {d.CacheReadTokens, &u.CacheReadTokens}} {
		if c.from != nil {
			*c.to = *c.from
		}
	}
	if d.OutputTokens > 0 {
		u.OutputTokens = d.OutputTokens
	}
}
