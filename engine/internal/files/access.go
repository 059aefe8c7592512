package files

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/coppice-db/coppice/codec"
	"github.com/coppice-db/coppice/engine/internal/model"
)

// Loc is what an access id names: one version of one file of a record
// of a branch.
type Loc struct {
	DB, Branch, Table, Col uint32
	Seq                    uint64
	FileID, RecordID       string
}

// accessIDVersion is the first byte of every access id's payload.
const accessIDVersion = 1

// EncodeAccessID returns the URL-safe access id of a file version. It is
// opaque to clients; it carries no secret: private files need a signature.
func EncodeAccessID(l Loc) string {
	b := make([]byte, 0, 26+len(l.FileID)+len(l.RecordID))
	b = append(b, accessIDVersion)
	b = codec.AppendU32(b, l.DB)
	b = codec.AppendU32(b, l.Branch)
	b = codec.AppendU32(b, l.Table)
	b = codec.AppendU32(b, l.Col)
	b = codec.AppendU64(b, l.Seq)
	b = append(b, byte(len(l.FileID)))
	b = append(b, l.FileID...)
	b = append(b, l.RecordID...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeAccessID parses an access id; any malformed one is not found.
func DecodeAccessID(s string) (Loc, error) {
	notFound := model.NotFoundf("file not found")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 26 || b[0] != accessIDVersion {
		return Loc{}, notFound
	}
	l := Loc{
		DB: binary.BigEndian.Uint32(b[1:]), Branch: binary.BigEndian.Uint32(b[5:]),
		Table: binary.BigEndian.Uint32(b[9:]), Col: binary.BigEndian.Uint32(b[13:]),
		Seq: binary.BigEndian.Uint64(b[17:]),
	}
	n := int(b[25])
	if n == 0 || 26+n >= len(b) {
		return Loc{}, notFound
	}
	l.FileID, l.RecordID = string(b[26:26+n]), string(b[26+n:])
	if !model.ValidFileID(l.FileID) || model.CheckRecordID(l.RecordID) != nil {
		return Loc{}, notFound
	}
	return l, nil
}

// Purposes of file URL signatures: a signature for one never serves the
// other.
const (
	PurposeRead   byte = 'r'
	PurposeUpload byte = 'u'
)

// fileMAC is the truncated HMAC of a file URL signature.
func fileMAC(secret []byte, purpose byte, accessID string, exp uint64) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte{purpose})
	m.Write(codec.AppendU64(nil, exp))
	m.Write([]byte(accessID))
	return m.Sum(nil)[:16]
}

// Sign returns the verify parameter that lets a URL with accessID serve
// purpose until exp: the expiry, in Unix milliseconds so that a short ttl
// is not cut short or stretched by rounding, and an HMAC of it under
// secret.
func Sign(secret []byte, purpose byte, accessID string, exp time.Time) string {
	ms := uint64(exp.UnixMilli())
	b := codec.AppendU64(nil, ms)
	return base64.RawURLEncoding.EncodeToString(append(b, fileMAC(secret, purpose, accessID, ms)...))
}

// Verify reports whether verify is a valid signature of accessID for
// purpose under secret that has not expired at now.
func Verify(secret []byte, purpose byte, accessID, verify string, now time.Time) bool {
	if verify == "" {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(verify)
	if err != nil || len(b) != 24 {
		return false
	}
	exp := binary.BigEndian.Uint64(b)
	if !hmac.Equal(b[8:], fileMAC(secret, purpose, accessID, exp)) {
		return false
	}
	return uint64(now.UnixMilli()) < exp
}
