package work

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// decodeFetched decodes a payload a worker is about to run into j (whose raw bytes it is), as
// decodeJob would, and checks that it names its queue. Payloads of the usual shape take a path
// without reflection (decodeFast); anything else goes through encoding/json.
func decodeFetched(j *Job, queueName string) error {
	if !decodeFast(j, j.raw, queueName) {
		w, err := decodeWire(j.raw)
		if err != nil {
			return fmt.Errorf("malformed job payload: %w", err)
		}
		j.setWire(w)
	}
	q, fetchedKey := j.q, string(j.fetchedKey())
	if j.Name == "" {
		return errors.New("malformed job payload: no job name")
	}
	if j.Name != queueName {
		return fmt.Errorf("job name %q does not match its queue %q", j.Name, queueName)
	}
	if q != nil && j.Key != fetchedKey {
		if q.keyed {
			return fmt.Errorf("job key %q does not match the queue of key %q it was taken from", j.Key, fetchedKey)
		}
		return fmt.Errorf("job key %q found in the queue of its name, not in its key's queue", j.Key)
	}
	return nil
}

// The fields decodeFast knows, as bits of a set (a key seen twice sends the payload to the full
// decoder, whose rules for duplicates then apply).
const (
	fastName = 1 << iota
	fastID
	fastT
	fastArgs
	fastUnique
	fastUniqueKey
	fastFails
	fastErr
	fastFailedAt
	fastBatch
	fastTracked
	fastKey
	fastKeyHold
	fastScheduleID
	fastTick
	fastDebounce
	fastGroup
)

// decodeFast decodes data into j without reflection when data has the shape that encoders of the
// wire format write: one object whose keys are Job fields spelt exactly, strings of printable ASCII
// without escapes, integers without fraction or exponent, booleans, and args null or an object
// (decoded as encoding/json with UseNumber would). It leaves the fields it does not see untouched
// and reports false, having perhaps set some fields, when data needs the full decoder: any other
// key, a string needing unescaping, a number of another form, a duplicate key, malformed JSON. The
// full decoder then decides, so both paths agree on every input (a fuzz test holds them to it).
// queueName is returned as the Name when the payload names it, saving an allocation.
func decodeFast(j *Job, data []byte, queueName string) bool {
	p := fastParser{b: data}
	if !p.byte('{') {
		return false
	}
	seen := 0
	if p.peek() == '}' {
		p.i++
		return p.end()
	}
	for {
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return false
		}
		var bit int
		switch string(key) {
		case "name":
			bit = fastName
			s, ok := p.str()
			if !ok {
				return false
			}
			if string(s) == queueName {
				j.Name = queueName
			} else {
				j.Name = string(s)
			}
		case "id":
			bit = fastID
			s, ok := p.str()
			if !ok {
				return false
			}
			j.ID = string(s)
		case "t":
			bit = fastT
			if j.EnqueuedAt, ok = p.int(); !ok {
				return false
			}
		case "args":
			bit = fastArgs
			if j.Args, ok = p.args(); !ok {
				return false
			}
		case "unique":
			bit = fastUnique
			if j.Unique, ok = p.bool(); !ok {
				return false
			}
		case "unique_key":
			bit = fastUniqueKey
			s, ok := p.str()
			if !ok {
				return false
			}
			j.UniqueKey = string(s)
		case "fails":
			bit = fastFails
			if j.Fails, ok = p.int(); !ok {
				return false
			}
		case "err":
			bit = fastErr
			s, ok := p.str()
			if !ok {
				return false
			}
			j.LastErr = string(s)
		case "failed_at":
			bit = fastFailedAt
			if j.FailedAt, ok = p.int(); !ok {
				return false
			}
		case "batch":
			bit = fastBatch
			s, ok := p.str()
			if !ok {
				return false
			}
			j.Batch = string(s)
		case "tracked":
			bit = fastTracked
			if j.Tracked, ok = p.bool(); !ok {
				return false
			}
		case "key":
			bit = fastKey
			s, ok := p.str()
			if !ok {
				return false
			}
			j.Key = string(s)
		case "key_hold":
			bit = fastKeyHold
			if j.KeyHold, ok = p.bool(); !ok {
				return false
			}
		case "schedule_id":
			bit = fastScheduleID
			s, ok := p.str()
			if !ok {
				return false
			}
			j.ScheduleID = string(s)
		case "tick":
			bit = fastTick
			if j.Tick, ok = p.int(); !ok {
				return false
			}
		case "debounce":
			bit = fastDebounce
			s, ok := p.str()
			if !ok {
				return false
			}
			j.Debounce = string(s)
		case "group":
			bit = fastGroup
			s, ok := p.str()
			if !ok {
				return false
			}
			j.Group = string(s)
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch p.next() {
		case ',':
		case '}':
			return p.end()
		default:
			return false
		}
	}
}

// fastParser reads the shapes decodeFast accepts; every method reports false on anything else.
type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) skipSpace() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) peek() byte {
	p.skipSpace()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *fastParser) next() byte {
	c := p.peek()
	if p.i < len(p.b) {
		p.i++
	}
	return c
}

func (p *fastParser) byte(c byte) bool { return p.next() == c }

// end reports whether nothing but white space follows.
func (p *fastParser) end() bool {
	p.skipSpace()
	return p.i == len(p.b)
}

// str reads a string of printable ASCII without escapes and returns its bytes.
func (p *fastParser) str() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := p.b[start:p.i]
			p.i++
			return s, true
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// int reads an integer as JSON writes it: an optional minus, then 0 or digits not starting with 0.
func (p *fastParser) int() (int64, bool) {
	p.skipSpace()
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	start := p.i
	var n uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		if p.i-start >= 18 { // longer numbers: let the full decoder check their range
			return 0, false
		}
		n = n*10 + uint64(p.b[p.i]-'0')
		p.i++
	}
	digits := p.i - start
	if digits == 0 || (digits > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

func (p *fastParser) bool() (bool, bool) {
	p.skipSpace()
	switch {
	case bytes.HasPrefix(p.b[p.i:], []byte("true")):
		p.i += 4
		return true, true
	case bytes.HasPrefix(p.b[p.i:], []byte("false")):
		p.i += 5
		return false, true
	}
	return false, false
}

// args reads null (nil args) or an object, decoded with UseNumber and normalized as decodeWire does.
// Args of the usual shapes are read without encoding/json (object).
func (p *fastParser) args() (map[string]interface{}, bool) {
	switch p.peek() {
	case 'n':
		if bytes.HasPrefix(p.b[p.i:], []byte("null")) {
			p.i += 4
			return nil, true
		}
		return nil, false
	case '{':
	default:
		return nil, false
	}
	start := p.i
	if m, ok := p.object(0); ok {
		return m, true
	}
	p.i = start
	end, ok := skipObject(p.b, p.i)
	if !ok {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(p.b[p.i:end]))
	dec.UseNumber()
	var m map[string]interface{}
	if err := dec.Decode(&m); err != nil {
		return nil, false
	}
	for k, v := range m {
		m[k] = normalizeNumber(v)
	}
	p.i = end
	return m, true
}

// maxFastDepth bounds the nesting object reads; deeper args go to encoding/json.
const maxFastDepth = 16

// object reads the object at p.i ('{') without encoding/json when it holds only strings (as str
// reads them), integers within ±2^53 (as int reads them; not -0), booleans, null, and objects and
// arrays of those nested up to maxFastDepth deep, into what decoding with UseNumber and normalizing
// gives: float64 for the integers, map[string]interface{} and []interface{} for objects and arrays.
// It reports false, with p.i anywhere, on anything else.
func (p *fastParser) object(depth int) (map[string]interface{}, bool) {
	p.i++ // '{'
	m := make(map[string]interface{})
	if p.peek() == '}' {
		p.i++
		return m, true
	}
	for {
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return nil, false
		}
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		m[string(key)] = v // a repeated key keeps its last value, as with encoding/json
		switch p.next() {
		case ',':
		case '}':
			return m, true
		default:
			return nil, false
		}
	}
}

// array reads an array at p.i ('[').
func (p *fastParser) array(depth int) ([]interface{}, bool) {
	p.i++ // '['
	a := []interface{}{}
	if p.peek() == ']' {
		p.i++
		return a, true
	}
	for {
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		switch p.next() {
		case ',':
		case ']':
			return a, true
		default:
			return nil, false
		}
	}
}

// value reads one value of an object or array at depth.
func (p *fastParser) value(depth int) (interface{}, bool) {
	switch c := p.peek(); {
	case c == '"':
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		return string(s), true
	case c == '-' || (c >= '0' && c <= '9'):
		n, ok := p.int()
		if !ok || n < -(1<<53) || n > 1<<53 || (n == 0 && c == '-') {
			return nil, false
		}
		return float64(n), true
	case c == 't' || c == 'f':
		b, ok := p.bool()
		if !ok {
			return nil, false
		}
		return b, true
	case c == 'n' && bytes.HasPrefix(p.b[p.i:], []byte("null")):
		p.i += 4
		return nil, true
	case c == '{' && depth < maxFastDepth:
		m, ok := p.object(depth + 1)
		if !ok {
			return nil, false
		}
		return m, true
	case c == '[' && depth < maxFastDepth:
		a, ok := p.array(depth + 1)
		if !ok {
			return nil, false
		}
		return a, true
	}
	return nil, false
}

// skipObject returns the index just past the object that starts at b[i] ('{'), following nesting
// and strings; it does not validate what it skips (the decoder of the object does).
func skipObject(b []byte, i int) (int, bool) {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		}
	}
	return 0, false
}
