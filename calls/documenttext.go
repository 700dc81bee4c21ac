package calls

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// DocumentTexts returns the texts of the text files the item b begins
// carries (nil for none): Messages' documents of a text source, of a
// content source (their text blocks) or of a base64 source whose media
// type is text, and the text data URLs of Chat Completions' file and
// Responses' input_file parts, at any depth of the item (a tool result's
// content included). The model reads a file's text as plainly as a
// message's, but a block's Text holds only its item's text parts, so
// the rules that look for what untrusted text says read these too.
func DocumentTexts(b *events.Block) []string {
	item := b.Meta[MetaItem]
	// The item is canonical JSON (no white space): a file of another kind
	// (a PDF, an image) is not parsed at every call the rules check.
	if item == "" || b.Meta[MetaPart] != "" || !(strings.Contains(item, `"media_type":"text/`) ||
		strings.Contains(item, `"source":{"content":`) || strings.Contains(item, "data:text/")) {
		return nil
	}
	var v any
	if json.Unmarshal([]byte(item), &v) != nil {
		return nil
	}
	var texts []string
	collectDocumentTexts(v, &texts)
	return texts
}

// collectDocumentTexts appends to texts the file texts v holds.
func collectDocumentTexts(v any, texts *[]string) {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			collectDocumentTexts(e, texts)
		}
	case map[string]any:
		if src, ok := v["source"].(map[string]any); ok && v["type"] == "document" {
			switch src["type"] {
			case "text":
				if s, ok := src["data"].(string); ok && s != "" {
					*texts = append(*texts, s)
				}
				return
			case "content":
				if s, ok := src["content"].(string); ok {
					// The content source's text, given as one string.
					if s != "" {
						*texts = append(*texts, s)
					}
					return
				}
				parts, _ := src["content"].([]any)
				var lines []string
				for _, p := range parts {
					if p, ok := p.(map[string]any); ok && p["type"] == "text" {
						if s, ok := p["text"].(string); ok && s != "" {
							lines = append(lines, s)
						}
					}
				}
				if len(lines) > 0 {
					*texts = append(*texts, strings.Join(lines, "\n"))
				}
				return
			case "base64":
				mt, _ := src["media_type"].(string)
				data, _ := src["data"].(string)
				if strings.HasPrefix(mt, "text/") {
					if b, ok := decodeBase64(data); ok && len(b) > 0 {
						*texts = append(*texts, string(b))
					}
				}
				return
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) { // in one order, live and in replay
			e := v[k]
			if s, ok := e.(string); ok {
				if t, ok := textDataURL(s); ok && t != "" {
					*texts = append(*texts, t)
				}
				continue
			}
			collectDocumentTexts(e, texts)
		}
	}
}

// textDataURL decodes a data URL of a text media type ("data:text/plain;
// base64,..."); ok is false for any other string.
func textDataURL(s string) (string, bool) {
	rest, ok := strings.CutPrefix(s, "data:text/")
	if !ok {
		return "", false
	}
	params, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", false
	}
	if strings.HasSuffix(params, ";base64") {
		b, ok := decodeBase64(data)
		return string(b), ok
	}
	t, err := url.PathUnescape(data)
	return t, err == nil
}

// decodeBase64 decodes standard base64, padded or not, as providers
// accept it.
func decodeBase64(s string) ([]byte, bool) {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, true
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	return b, err == nil
}
