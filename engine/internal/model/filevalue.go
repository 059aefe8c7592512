package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // image.DecodeConfig reads GIF dimensions
	_ "image/jpeg" // and JPEG
	_ "image/png"  // and PNG
	"mime"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/coppice-db/coppice/codec"
)

// FileTarget selects a file of a record for the binary file endpoints
// (compat-api.md §11.2).
type FileTarget struct {
	Table, Record, Column string
	// Item is true on the .../file/{fileId} route, with FileID its id ("" for
	// .../file/): an item of a file[] column, or a new one. Item false
	// (.../file) selects the file of a file column.
	Item   bool
	FileID string
}

// Limits and defaults of file values.
const (
	MaxFileBase64   = 20971520              // characters of base64Content
	MaxFileBytes    = MaxFileBase64 / 4 * 3 // bytes of one file's content
	MaxFileItems    = 50                    // items of a file[] value
	maxFileTimeout  = 86400                 // seconds, both timeouts
	defaultSigned   = 60
	defaultUpload   = 86400
	defaultFileType = "application/octet-stream"
	FileChunkSize   = 1 << 20
	maxFileNameLen  = 1024
	maxFileIDLen    = 64
)

var (
	fileNamePattern  = regexp.MustCompile(`^[0-9a-zA-Z!\-_.*'()]*$`)
	mediaTypePattern = regexp.MustCompile(`^\w+/[-+.\w]+$`)
	fileIDPattern    = regexp.MustCompile(`^[a-zA-Z0-9_\-~]+$`)
)

// PendingFiles starts a file column value that writer.fill validated and
// writeFiles has not resolved yet. Stored values are JSON, which never
// starts with a NUL byte.
const PendingFiles = "\x00files:"

// IsFileType reports whether a column holds files.
func IsFileType(t ColumnType) bool { return t == TypeFile || t == TypeFileArray }

// StoredFile is one file as a record stores it.
type StoredFile struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	MediaType string `json:"mediaType"`
	Size      int64  `json:"size"`
	Version   uint64 `json:"version"`
	Public    bool   `json:"enablePublicUrl"`
	Signed    int    `json:"signedUrlTimeout"`
	Upload    int    `json:"uploadUrlTimeout"`
	Image     bool   `json:"image,omitempty"`
	Width     int    `json:"width,omitempty"`
	Height    int    `json:"height,omitempty"`
	// Seq is the commit that wrote the content: with the table, column and
	// id it names the content's keys.
	Seq uint64 `json:"seq"`
}

// FileInput is one validated input file object. Absent optional fields are
// nil: a new file takes the default, an existing one keeps its value.
type FileInput struct {
	ID        string  `json:"id,omitempty"`
	Name      string  `json:"name"`
	MediaType *string `json:"mediaType,omitempty"`
	Content   *string `json:"base64Content,omitempty"`
	Public    *bool   `json:"enablePublicUrl,omitempty"`
	Signed    *int    `json:"signedUrlTimeout,omitempty"`
	Upload    *int    `json:"uploadUrlTimeout,omitempty"`
}

// fileOutputKeys are the keys of file objects as records return them:
// accepted on input (clients echo records back) and ignored.
var fileOutputKeys = map[string]bool{
	"size": true, "version": true, "attributes": true, "url": true, "signedUrl": true, "uploadUrl": true,
}

// toFileValue validates the input value of a file or file[] column and
// returns it pending (see writeFiles); an empty file[] is null.
func toFileValue(c *Column, in any) (codec.Value, error) {
	var items []FileInput
	switch c.Type {
	case TypeFile:
		m, ok := in.(map[string]any)
		if !ok {
			return codec.Value{}, Invalidf("column [%s]: invalid value: expected a file object", c.Path)
		}
		f, err := parseFileInput(c, "", m, false)
		if err != nil {
			return codec.Value{}, err
		}
		items = []FileInput{f}
	default:
		l, ok := in.([]any)
		if !ok {
			return codec.Value{}, Invalidf("column [%s]: invalid value: expected an array of file objects", c.Path)
		}
		if len(l) > MaxFileItems {
			return codec.Value{}, Invalidf("column [%s]: a file[] value holds at most %d files, got %d", c.Path, MaxFileItems, len(l))
		}
		seen := map[string]bool{}
		for i, x := range l {
			where := "file entry [" + strconv.Itoa(i) + "]: "
			m, ok := x.(map[string]any)
			if !ok {
				return codec.Value{}, Invalidf("column [%s]: %sinvalid value: expected a file object", c.Path, where)
			}
			f, err := parseFileInput(c, where, m, true)
			if err != nil {
				return codec.Value{}, err
			}
			if f.ID != "" {
				if seen[f.ID] {
					return codec.Value{}, Invalidf("column [%s]: %sfile id [%s] is given twice", c.Path, where, f.ID)
				}
				seen[f.ID] = true
			}
			items = append(items, f)
		}
		if len(items) == 0 {
			return codec.Null(), nil
		}
	}
	b, err := json.Marshal(items)
	if err != nil {
		return codec.Value{}, err
	}
	return codec.String(PendingFiles + string(b)), nil
}

// parseFileInput validates one input file object; where prefixes messages
// about a file[] item.
func parseFileInput(c *Column, where string, m map[string]any, item bool) (FileInput, error) {
	var f FileInput
	bad := func(format string, args ...any) (FileInput, error) {
		return FileInput{}, Invalidf("column [%s]: %s%s", c.Path, where, fmt.Sprintf(format, args...))
	}
	if _, ok := m["name"]; !ok {
		return bad("a file needs a name")
	}
	for k, v := range m {
		switch k {
		case "name":
			s, ok := v.(string)
			if !ok {
				return bad("name must be a string")
			}
			if len(s) > maxFileNameLen || !fileNamePattern.MatchString(s) {
				return bad("invalid file name [%s]: at most %d of the characters 0-9 a-z A-Z ! - _ . * ' ( )", s, maxFileNameLen)
			}
			f.Name = s
		case "mediaType":
			if v == nil {
				continue
			}
			s, ok := v.(string)
			if !ok || len(s) < 3 || len(s) > 255 || !mediaTypePattern.MatchString(s) {
				return bad("invalid mediaType [%v]", v)
			}
			f.MediaType = &s
		case "base64Content":
			if v == nil {
				continue
			}
			s, ok := v.(string)
			if !ok {
				return bad("base64Content must be a string")
			}
			if len(s) > MaxFileBase64 {
				return bad("base64Content is longer than %d characters", MaxFileBase64)
			}
			if _, err := DecodeBase64(s); err != nil {
				return bad("base64Content is not valid base64")
			}
			f.Content = &s
		case "enablePublicUrl":
			if v == nil {
				continue
			}
			b, ok := v.(bool)
			if !ok {
				return bad("enablePublicUrl must be a bool")
			}
			f.Public = &b
		case "signedUrlTimeout", "uploadUrlTimeout":
			if v == nil {
				continue
			}
			n, err := fileTimeout(v)
			if err != nil {
				return bad("%s %s", k, err.Error())
			}
			if k == "signedUrlTimeout" {
				f.Signed = &n
			} else {
				f.Upload = &n
			}
		case "id":
			if !item || v == nil {
				continue // a file column's file has no public id
			}
			s, ok := v.(string)
			if !ok || !ValidFileID(s) {
				return bad("invalid file id [%v]", v)
			}
			f.ID = s
		default:
			if !fileOutputKeys[k] {
				return bad("unknown file field [%s]", k)
			}
		}
	}
	return f, nil
}

// fileTimeout reads a timeout in seconds: an integer in 0..86400.
func fileTimeout(v any) (int, error) {
	var n int64
	switch x := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			return 0, errors.New("must be an integer number of seconds")
		}
		n = i
	case int:
		n = int64(x)
	case int64:
		n = x
	case float64:
		if x != float64(int64(x)) {
			return 0, errors.New("must be an integer number of seconds")
		}
		n = int64(x)
	default:
		return 0, errors.New("must be an integer number of seconds")
	}
	if n < 0 || n > maxFileTimeout {
		return 0, errors.New("must be between 0 and 86400 seconds")
	}
	return int(n), nil
}

// ValidFileID reports whether s may name a file[] item: it goes into keys
// (no NUL) and URL paths.
func ValidFileID(s string) bool { return len(s) <= maxFileIDLen && fileIDPattern.MatchString(s) }

// DecodeBase64 decodes standard base64, padded or not.
func DecodeBase64(s string) ([]byte, error) {
	if strings.HasSuffix(s, "=") || len(s)%4 == 0 {
		return base64.StdEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// StoredFiles decodes a stored file column value: one file or the items of
// a file[]. A pending value has no stored files.
func StoredFiles(c *Column, v codec.Value) []StoredFile {
	if v.IsNull() || v.Kind != codec.KindString || strings.HasPrefix(v.Str, PendingFiles) {
		return nil
	}
	if c.Type == TypeFile {
		var f StoredFile
		if json.Unmarshal([]byte(v.Str), &f) != nil {
			return nil
		}
		return []StoredFile{f}
	}
	var l []StoredFile
	if json.Unmarshal([]byte(v.Str), &l) != nil {
		return nil
	}
	return l
}

// StoredValue encodes the files of a column as its record value; no files
// is null.
func StoredValue(c *Column, files []StoredFile) codec.Value {
	if len(files) == 0 {
		return codec.Null()
	}
	var b []byte
	if c.Type == TypeFile {
		b, _ = json.Marshal(files[0])
	} else {
		b, _ = json.Marshal(files)
	}
	return codec.String(string(b))
}

// NewFileID returns the id of a new file: opaque, 26 alphanumerics, derived
// from what makes it unique (the commit, the record, the column and the
// position) so that applying a command stays deterministic.
func NewFileID(db uint32, seq uint64, recordID string, col uint32, i int) string {
	h := sha256.New()
	var b [24]byte
	binary.BigEndian.PutUint32(b[0:], db)
	binary.BigEndian.PutUint64(b[4:], seq)
	binary.BigEndian.PutUint32(b[12:], col)
	binary.BigEndian.PutUint64(b[16:], uint64(i))
	h.Write(b[:])
	h.Write([]byte(recordID))
	sum := h.Sum(nil)
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

// imageSize returns the dimensions of PNG, JPEG and GIF content.
func imageSize(data []byte) (w, h int, ok bool) {
	if len(data) == 0 {
		return 0, 0, false
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0, false
	}
	return cfg.Width, cfg.Height, true
}

// SetContent makes f describe new content written by commit seq.
func (f *StoredFile) SetContent(data []byte, seq uint64) {
	f.Seq, f.Size, f.Version = seq, int64(len(data)), f.Version+1
	f.Width, f.Height, f.Image = 0, 0, false
	if w, h, ok := imageSize(data); ok {
		f.Width, f.Height, f.Image = w, h, true
	}
}

// NewStoredFile is a file with no content and the defaults of column c.
func NewStoredFile(c *Column, id string, seq uint64) StoredFile {
	return StoredFile{
		ID: id, MediaType: defaultFileType, Public: c.FilePublic != nil && *c.FilePublic,
		Signed: defaultSigned, Upload: defaultUpload, Seq: seq,
	}
}

// FileRef names one stored content.
type FileRef struct {
	Col  uint32
	ID   string
	Seq  uint64
	Size int64
}

// FileRefs lists the contents a record names.
func FileRefs(t *Table, rec *codec.Record) map[FileRef]bool {
	if rec == nil {
		return nil
	}
	var out map[FileRef]bool
	for _, f := range rec.Fields {
		c := t.ByID[f.Col]
		if c == nil || !IsFileType(c.Type) {
			continue
		}
		for _, sf := range StoredFiles(c, f.Val) {
			if out == nil {
				out = map[FileRef]bool{}
			}
			out[FileRef{Col: c.ID, ID: sf.ID, Seq: sf.Seq, Size: sf.Size}] = true
		}
	}
	return out
}

// CheckNoFiles rejects file values in bulk inserts and transactions
// (compat-api.md §3.4): content is written by single-record writes only.
func CheckNoFiles(t *Table, values map[string]any) error {
	if !slices.ContainsFunc(t.Leaves, func(c *Column) bool { return IsFileType(c.Type) }) {
		return nil // nothing to walk: a bulk insert checks every record
	}
	var walk func(prefix string, m map[string]any) error
	walk = func(prefix string, m map[string]any) error {
		for _, k := range SortedKeys(m) {
			c := t.ByPath[prefix+k]
			if c == nil {
				continue
			}
			switch {
			case c.Type == TypeObject:
				if sub, ok := m[k].(map[string]any); ok {
					if err := walk(c.Path+".", sub); err != nil {
						return err
					}
				}
			case c.Type == TypeFile && m[k] != nil:
				return Invalidf("column [%s]: file upload not permitted in transaction", c.Path)
			case c.Type == TypeFileArray && m[k] != nil:
				if l, ok := m[k].([]any); ok && len(l) == 0 {
					continue
				}
				return Invalidf("column [%s]: file entry [0]: file upload not permitted in transaction", c.Path)
			}
		}
		return nil
	}
	return walk("", values)
}

// File is a file as records and the file endpoints return it
// (compat-api.md §11.1). The HTTP layer turns AccessID and the verify
// parameters into absolute URLs.
type File struct {
	// ID names a file[] item; it is empty for the file of a file column.
	ID               string
	Name             string
	MediaType        string
	Size             int64
	Version          uint64
	EnablePublicURL  bool
	SignedURLTimeout int
	UploadURLTimeout int
	// Image is set for PNG, JPEG and GIF content, with its dimensions.
	Image         bool
	Width, Height int
	// AccessID is the last path segment of the file's URL: it names the
	// file's current version on one branch. It is empty for files read
	// without their location (Record.Values).
	AccessID string
	// Fields, when not nil, are the only keys to return (the fields a
	// projection named one by one); nil means every default field.
	Fields map[string]bool
	// Base64Content, SignedVerify and UploadVerify are set only when asked
	// for: the content, and the verify parameters of the signed read URL
	// and of the upload URL.
	Base64Content *string
	SignedVerify  string
	UploadVerify  string
}

// PublicFile converts a stored file of column c.
func PublicFile(c *Column, f *StoredFile) File {
	out := File{
		Name: f.Name, MediaType: f.MediaType, Size: f.Size, Version: f.Version,
		EnablePublicURL: f.Public, SignedURLTimeout: f.Signed, UploadURLTimeout: f.Upload,
		Image: f.Image, Width: f.Width, Height: f.Height,
	}
	if c.Type == TypeFileArray {
		out.ID = f.ID
	}
	return out
}

// fromFileValue is FromValue of file columns: a File, or a []File for
// file[], without location; nil for none.
func fromFileValue(c *Column, v codec.Value) any {
	stored := StoredFiles(c, v)
	if len(stored) == 0 {
		return nil
	}
	out := make([]File, len(stored))
	for i := range stored {
		out[i] = PublicFile(c, &stored[i])
	}
	if c.Type == TypeFile {
		return out[0]
	}
	return out
}

// CheckMediaType normalizes a Content-Type for storage: parameters dropped,
// "" kept as "keep the stored one".
func CheckMediaType(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", nil
	}
	mt, _, err := mime.ParseMediaType(s)
	if err != nil || len(mt) < 3 || len(mt) > 255 || !mediaTypePattern.MatchString(mt) {
		return "", Invalidf("invalid media type [%s]", s)
	}
	return mt, nil
}
