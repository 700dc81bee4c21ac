package events

// OpenCalls returns the inference.started events of evs (a step, as
// stored) that no inference.finished or inference.failed of evs closes:
// what a writer left when it stopped after recording a model call's start
// and before its outcome. The worker resuming a request and the gateway
// recording a conversation's next call close them.
func OpenCalls(evs []Event) []Event {
	closed := map[string]bool{}
	for _, e := range evs {
		switch p := e.Payload.(type) {
		case InferenceFinished:
			closed[p.InferenceID] = true
		case InferenceFailed:
			closed[p.InferenceID] = true
		}
	}
	var open []Event
	for _, e := range evs {
		if p, ok := e.Payload.(InferenceStarted); ok && !closed[p.InferenceID] {
			open = append(open, e)
		}
	}
	return open
}
