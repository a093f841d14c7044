package rdb

import (
	"bytes"
	"strconv"
	"testing"
)

// FuzzParseHandOff: a message of a pool's hand-off channel, as any client of Redis may publish one,
// never panics the subscription, and a hand-off as hand_off.lua writes it reads back as written.
func FuzzParseHandOff(f *testing.F) {
	f.Add([]byte(`3:1:a{"name":"a"}`), "a", uint64(3), []byte(`{}`))
	f.Add([]byte("0:0:17"), "", uint64(0), []byte("17"))
	f.Add([]byte("x:1:a"), "long-name", uint64(18446744073709551615), []byte(""))
	f.Fuzz(func(t *testing.T, msg []byte, name string, epoch uint64, payload []byte) {
		if n, _, p, ok := ParseHandOff(msg); ok && len(n)+len(p) > len(msg) {
			t.Fatalf("ParseHandOff(%q) read %d bytes of name and payload from a message of %d", msg, len(n)+len(p), len(msg))
		}
		written := []byte(strconv.FormatUint(epoch, 10) + ":" + strconv.Itoa(len(name)) + ":" + name)
		written = append(written, payload...)
		n, e, p, ok := ParseHandOff(written)
		if !ok || n != name || e != epoch || !bytes.Equal(p, payload) {
			t.Fatalf("ParseHandOff(%q) = %q, %d, %q, %v; want %q, %d, %q", written, n, e, p, ok, name, epoch, payload)
		}
	})
}
