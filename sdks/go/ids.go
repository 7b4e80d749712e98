package regina

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// newUUIDv7 returns a time-ordered UUID (RFC 9562, version 7) in canonical text form. The client
// uses it as the transactionId of push items that have none, so that a retried push is
// deduplicated by the broker instead of stored twice.
func newUUIDv7() string {
	var u [16]byte
	if _, err := rand.Read(u[6:]); err != nil {
		panic("regina: reading random bytes: " + err.Error())
	}
	ms := uint64(time.Now().UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = u[6]&0x0f | 0x70 // version 7
	u[8] = u[8]&0x3f | 0x80 // variant 10
	var out [36]byte
	hex.Encode(out[0:8], u[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], u[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], u[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], u[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], u[10:16])
	return string(out[:])
}
