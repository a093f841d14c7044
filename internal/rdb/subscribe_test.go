package rdb

import (
	"bytes"
	"strconv"
	"testing"
)

// FuzzParseHandOff: a message of a pool's hand-off channel, as any client of Redis may publish one,
// never panics the subscription, and a hand-off as hand_off.lua writes it reads back as written.
func FuzzParseHandOff(f *testing.F) {
	f.Add([]byte(`3:12:1:a{"name":"a"}`), "a", uint32(3), int64(12), []byte(`{}`))
	f.Add([]byte("0:0:0:17"), "", uint32(0), int64(0), []byte("17"))
	f.Add([]byte("x:1:1:a"), "long-name", uint32(4294967295), int64(9223372036854775807), []byte(""))
	f.Fuzz(func(t *testing.T, msg []byte, name string, epoch uint32, seq int64, payload []byte) {
		if h, ok := ParseHandOff(msg); ok && len(h.Name)+len(h.Payload) > len(msg) {
			t.Fatalf("ParseHandOff(%q) read %d bytes of name and payload from a message of %d", msg, len(h.Name)+len(h.Payload), len(msg))
		}
		seq = max(seq, -seq, 0) // a count: never negative (the lowest int64 stays negative: 0 then)
		written := []byte(strconv.FormatUint(uint64(epoch), 10) + ":" + strconv.FormatInt(seq, 10) + ":" + strconv.Itoa(len(name)) + ":" + name)
		written = append(written, payload...)
		h, ok := ParseHandOff(written)
		if !ok || h.Name != name || h.Epoch != uint64(epoch) || h.Seq != seq || !bytes.Equal(h.Payload, payload) {
			t.Fatalf("ParseHandOff(%q) = %+v, %v; want %q, %d, %d, %q", written, h, ok, name, epoch, seq, payload)
		}
	})
}
