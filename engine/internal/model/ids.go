package model

import (
	"crypto/rand"
	"encoding/binary"
	"os"
	"sync/atomic"
	"time"
)

// base32hex is the alphabet of generated ids: digits then a..v, so the text
// sorts like the bytes.
const base32hex = "0123456789abcdefghijklmnopqrstuv"

// IDGen makes 12-byte, time-ordered unique ids in the xid layout: 4 bytes of
// Unix seconds, 3 bytes of machine identity, 2 bytes of process id and a
// 3-byte counter, written as 20 characters of lowercase base32hex.
type IDGen struct {
	machine [3]byte
	pid     uint16
	counter atomic.Uint32
}

func NewIDGen() *IDGen {
	g := &IDGen{pid: uint16(os.Getpid())}
	var seed [7]byte
	if _, err := rand.Read(seed[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	copy(g.machine[:], seed[:3])
	g.counter.Store(binary.BigEndian.Uint32(seed[3:]) & 0xFFFFFF)
	return g
}

// Next returns prefix + 20 id characters for time t.
func (g *IDGen) Next(prefix string, t time.Time) string {
	var b [12]byte
	binary.BigEndian.PutUint32(b[:4], uint32(t.Unix()))
	copy(b[4:7], g.machine[:])
	binary.BigEndian.PutUint16(b[7:9], g.pid)
	c := g.counter.Add(1)
	b[9], b[10], b[11] = byte(c>>16), byte(c>>8), byte(c)
	return prefix + encodeBase32hex(b)
}

func encodeBase32hex(b [12]byte) string {
	// 96 bits → 20 characters of 5 bits (the last one holds 1 bit).
	var out [20]byte
	var acc uint64
	bits := 0
	j := 0
	for _, c := range b {
		acc = acc<<8 | uint64(c)
		bits += 8
		for bits >= 5 {
			bits -= 5
			out[j] = base32hex[(acc>>uint(bits))&31]
			j++
		}
	}
	if bits > 0 {
		out[j] = base32hex[(acc<<uint(5-bits))&31]
	}
	return string(out[:])
}

// RandomString returns n characters drawn from alphabet by crypto/rand.
func RandomString(n int, alphabet string) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
