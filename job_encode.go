package work

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// encodeFast appends the wire form of j (which carries no Raw) to b without reflection, byte for
// byte what json.Marshal(j) writes, and reports false when j holds something it leaves to
// encoding/json: an args value of a type other than string, bool, nil, the integer types and
// float64 (a nested map, a slice, a type with its own MarshalJSON...), a float that is not finite,
// or a string that is not valid UTF-8. Strings that need escaping are escaped as encoding/json
// escapes them, HTML characters included. A fuzz test holds it to json.Marshal.
func encodeFast(b []byte, j *Job) ([]byte, bool) {
	b = append(b, '{')
	if j.Name != "" {
		b = append(b, `"name":`...)
		b = appendJSONString(b, j.Name)
		b = append(b, ',')
	}
	b = append(b, `"id":`...)
	b = appendJSONString(b, j.ID)
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, j.EnqueuedAt, 10)
	b = append(b, `,"args":`...)
	var ok bool
	if b, ok = appendArgs(b, j.Args); !ok {
		return b, false
	}
	if j.Unique {
		b = append(b, `,"unique":true`...)
	}
	if j.UniqueKey != "" {
		b = append(b, `,"unique_key":`...)
		b = appendJSONString(b, j.UniqueKey)
	}
	if j.Fails != 0 {
		b = append(b, `,"fails":`...)
		b = strconv.AppendInt(b, j.Fails, 10)
	}
	if j.LastErr != "" {
		b = append(b, `,"err":`...)
		b = appendJSONString(b, j.LastErr)
	}
	if j.FailedAt != 0 {
		b = append(b, `,"failed_at":`...)
		b = strconv.AppendInt(b, j.FailedAt, 10)
	}
	if j.Batch != "" {
		b = append(b, `,"batch":`...)
		b = appendJSONString(b, j.Batch)
	}
	if j.Tracked {
		b = append(b, `,"tracked":true`...)
	}
	if j.KeyHold {
		b = append(b, `,"key_hold":true`...)
	}
	if j.Key != "" {
		b = append(b, `,"key":`...)
		b = appendJSONString(b, j.Key)
	}
	if j.ScheduleID != "" {
		b = append(b, `,"schedule_id":`...)
		b = appendJSONString(b, j.ScheduleID)
	}
	if j.Tick != 0 {
		b = append(b, `,"tick":`...)
		b = strconv.AppendInt(b, j.Tick, 10)
	}
	if j.Debounce != "" {
		b = append(b, `,"debounce":`...)
		b = appendJSONString(b, j.Debounce)
	}
	if j.Group != "" {
		b = append(b, `,"group":`...)
		b = appendJSONString(b, j.Group)
	}
	return append(b, '}'), validStrings(j)
}

// validStrings reports whether the job's own string fields are valid UTF-8 (encoding/json replaces
// invalid bytes; the fast path leaves such jobs to it).
func validStrings(j *Job) bool {
	return utf8.ValidString(j.Name) && utf8.ValidString(j.ID) && utf8.ValidString(j.UniqueKey) &&
		utf8.ValidString(j.LastErr) && utf8.ValidString(j.Batch) && utf8.ValidString(j.Key) &&
		utf8.ValidString(j.ScheduleID) && utf8.ValidString(j.Debounce) && utf8.ValidString(j.Group)
}

// appendArgs appends args as encoding/json writes a map[string]interface{}: null when nil, else an
// object with its keys sorted.
func appendArgs(b []byte, args map[string]interface{}) ([]byte, bool) {
	if args == nil {
		return append(b, "null"...), true
	}
	var small [8]string
	keys := small[:0]
	for k := range args {
		if !utf8.ValidString(k) {
			return b, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		var ok bool
		if b, ok = appendArg(b, args[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendArg appends one args value of a type the fast path knows.
func appendArg(b []byte, v interface{}) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		if !utf8.ValidString(v) {
			return b, false
		}
		return appendJSONString(b, v), true
	case bool:
		return strconv.AppendBool(b, v), true
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case int32:
		return strconv.AppendInt(b, int64(v), 10), true
	case int16:
		return strconv.AppendInt(b, int64(v), 10), true
	case int8:
		return strconv.AppendInt(b, int64(v), 10), true
	case uint:
		return strconv.AppendUint(b, uint64(v), 10), true
	case uint64:
		return strconv.AppendUint(b, v, 10), true
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), true
	case uint16:
		return strconv.AppendUint(b, uint64(v), 10), true
	case uint8:
		return strconv.AppendUint(b, uint64(v), 10), true
	case float64:
		// encoding/json writes the shortest form, in 'f' notation for magnitudes in [1e-6, 1e21)
		// and zero; the 'e' notation and non-finite values (an error there) go to it.
		if a := math.Abs(v); math.IsNaN(v) || math.IsInf(v, 0) || (a != 0 && (a < 1e-6 || a >= 1e21)) {
			return b, false
		}
		return strconv.AppendFloat(b, v, 'f', -1, 64), true
	}
	return b, false
}

// appendJSONString appends s, valid UTF-8, quoted and escaped as json.Marshal escapes it: '"', '\\'
// and control characters, and also '<', '>', '&', U+2028 and U+2029.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
