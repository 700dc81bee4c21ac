package calls

import "encoding/json"

// TrimOtherChoices returns otherChoices (events.InferenceFinished's
// OtherChoices, the JSON array of a call's choices after the first) at
// least cut bytes shorter, for an outcome too large to store whole: the
// first choice is what the conversation goes on with and stays; of the
// others, those at the end are each replaced by {"index": i,
// "omitted_bytes": n, "keys": [...]} (their index, size and the content
// keys of their blocks, by which one an app goes on with is still
// recognised: OtherChoiceKeys), as few as will do, so that what is kept
// stays in order. Only when that does not save cut bytes (many choices
// smaller than their keys) are they left out without "keys". ok is false
// when leaving every other choice out does not save cut bytes (or the
// array cannot be read): the first choice is then too large by itself.
func TrimOtherChoices(otherChoices string, cut int) (trimmed string, ok bool) {
	if trimmed, ok = trimOtherChoices(otherChoices, cut, true); ok {
		return trimmed, true
	}
	return trimOtherChoices(otherChoices, cut, false)
}

// trimOtherChoices is TrimOtherChoices, its markers with "keys" when
// keyed.
func trimOtherChoices(otherChoices string, cut int, keyed bool) (string, bool) {
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
		m := omittedChoice{Index: index, OmittedBytes: len(c)}
		if keyed {
			m.Keys = omittedKeys(c)
		}
		marker, err := json.Marshal(m)
		if err != nil {
			return "", false
		}
		saved += len(c) - len(marker)
		choices[i] = marker
	}
	if saved < cut {
		return "", false
	}
	return jsonArray(choices), true
}

// omittedChoice is what a choice left out by TrimOtherChoices keeps.
type omittedChoice struct {
	Index        int                `json:"index"`
	OmittedBytes int                `json:"omitted_bytes"`
	Keys         []omittedChoiceKey `json:"keys,omitempty"`
}
