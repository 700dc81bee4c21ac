package worker

import (
	"strconv"
	"unicode/utf8"

	"github.com/turnlog/turnlog/events"
)

// appendDeltaJSON appends d as encoding/json marshals it, byte for byte
// (TestDeltaJSONMatchesEncodingJSON): a request publishes a few deltas,
// and reflection cost more than the rest of a delta's way out.
func appendDeltaJSON(dst []byte, d Delta) []byte {
	return appendDelta(dst, d.RequestID, d.Kind, d.Text, d.Step)
}

// appendDelta is appendDeltaJSON of the Delta with these fields, the text
// in the bytes a deltaBatch collects it in.
func appendDelta[S []byte | string](dst []byte, request string, kind events.Kind, text S, step int) []byte {
	dst = append(dst, `{"request_id":`...)
	dst = appendJSONString(dst, request)
	dst = append(dst, `,"kind":`...)
	dst = appendJSONString(dst, string(kind))
	dst = append(dst, `,"text":`...)
	dst = appendJSONString(dst, text)
	if step != 0 {
		dst = append(dst, `,"step":`...)
		dst = strconv.AppendInt(dst, int64(step), 10)
	}
	return append(dst, '}')
}

// appendJSONString appends s as a JSON string the way encoding/json does:
// '<', '>' and '&' escaped, invalid UTF-8 replaced by U+FFFD, U+2028 and
// U+2029 escaped.
func appendJSONString[S []byte | string](dst []byte, s S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := decodeRune(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func decodeRune[S []byte | string](s S) (rune, int) {
	var buf [utf8.UTFMax]byte
	return utf8.DecodeRune(buf[:copy(buf[:], s[:min(len(s), utf8.UTFMax)])])
}
