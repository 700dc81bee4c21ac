package calls

import (
	"encoding/json"
	"strconv"
)

// TrimOtherChoices returns otherChoices (events.InferenceFinished's
// OtherChoices, the JSON array of a call's choices after the first) at
// least cut bytes shorter, for an outcome too large to store whole: the
// first choice is what the conversation goes on with and stays; of the
// others, those at the end are each replaced by {"index": i,
// "omitted_bytes": n} (their index and size), as few as will do, so that
// what is kept stays in order. ok is false when leaving every other
// choice out does not save cut bytes (or the array cannot be read): the
// first choice is then too large by itself.
func TrimOtherChoices(otherChoices string, cut int) (trimmed string, ok bool) {
	var choices []json.RawMessage
	if json.Unmarshal([]byte(otherChoices), &choices) != nil {
		return "", false
	}
	saved := 0
	for i := len(choices) - 1; i >= 0 && saved < cut; i-- {
		c := choices[i]
		var head struct {
			Index        *int `json:"index"`
			OmittedBytes *int `json:"omitted_bytes"`
		}
		if json.Unmarshal(c, &head) == nil && head.OmittedBytes != nil {
			continue // left out already
		}
		index := i + 1 // the choices after the first, in order
		if head.Index != nil {
			index = *head.Index
		}
		marker := `{"index":` + strconv.Itoa(index) + `,"omitted_bytes":` + strconv.Itoa(len(c)) + `}`
		saved += len(c) - len(marker)
		choices[i] = json.RawMessage(marker)
	}
	if saved < cut {
		return "", false
	}
	return jsonArray(choices), true
}
