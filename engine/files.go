package engine

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
	"regexp"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coppice-db/coppice/codec"
)

// File columns (compat-api.md §11). A record keeps, for each file, only its
// metadata as JSON (storedFile): what queries read stays small. The bytes
// live under their own key family (codec.KindFileChunk), keyed by table,
// column, file id and the commit that wrote them, in the same batch as the
// record version that names them (codec/KEYS.md, "File contents").
//
// A JSON write reaches the record in two steps. writer.fill validates the
// input and leaves a pending value (the validated file objects, content
// still in base64); writer.writeRow, which knows the version it replaces,
// resolves it through writeFiles: it keeps the content of files named by a
// known id, writes new content, and deletes the content nothing names any
// more. The binary endpoints (PutFile, DeleteFile) write the content
// themselves and store a resolved value.

// Limits and defaults of file values.
const (
	maxFileBase64   = 20971520              // characters of base64Content
	MaxFileBytes    = maxFileBase64 / 4 * 3 // bytes of one file's content
	maxFileItems    = 50                    // items of a file[] value
	maxFileTimeout  = 86400                 // seconds, both timeouts
	defaultSigned   = 60
	defaultUpload   = 86400
	defaultFileType = "application/octet-stream"
	fileChunkSize   = 1 << 20
	maxFileNameLen  = 1024
	maxFileIDLen    = 64
)

var (
	fileNamePattern  = regexp.MustCompile(`^[0-9a-zA-Z!\-_.*'()]*$`)
	mediaTypePattern = regexp.MustCompile(`^\w+/[-+.\w]+$`)
	fileIDPattern    = regexp.MustCompile(`^[a-zA-Z0-9_\-~]+$`)
)

// pendingFiles starts a file column value that writer.fill validated and
// writeFiles has not resolved yet. Stored values are JSON, which never
// starts with a NUL byte.
const pendingFiles = "\x00files:"

// isFileType reports whether a column holds files.
func isFileType(t ColumnType) bool { return t == TypeFile || t == TypeFileArray }

// storedFile is one file as a record stores it.
type storedFile struct {
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

// fileInput is one validated input file object. Absent optional fields are
// nil: a new file takes the default, an existing one keeps its value.
type fileInput struct {
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
func toFileValue(c *column, in any) (codec.Value, error) {
	var items []fileInput
	switch c.Type {
	case TypeFile:
		m, ok := in.(map[string]any)
		if !ok {
			return codec.Value{}, invalidf("column [%s]: invalid value: expected a file object", c.path)
		}
		f, err := parseFileInput(c, "", m, false)
		if err != nil {
			return codec.Value{}, err
		}
		items = []fileInput{f}
	default:
		l, ok := in.([]any)
		if !ok {
			return codec.Value{}, invalidf("column [%s]: invalid value: expected an array of file objects", c.path)
		}
		if len(l) > maxFileItems {
			return codec.Value{}, invalidf("column [%s]: a file[] value holds at most %d files, got %d", c.path, maxFileItems, len(l))
		}
		seen := map[string]bool{}
		for i, x := range l {
			where := "file entry [" + strconv.Itoa(i) + "]: "
			m, ok := x.(map[string]any)
			if !ok {
				return codec.Value{}, invalidf("column [%s]: %sinvalid value: expected a file object", c.path, where)
			}
			f, err := parseFileInput(c, where, m, true)
			if err != nil {
				return codec.Value{}, err
			}
			if f.ID != "" {
				if seen[f.ID] {
					return codec.Value{}, invalidf("column [%s]: %sfile id [%s] is given twice", c.path, where, f.ID)
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
	return codec.String(pendingFiles + string(b)), nil
}

// parseFileInput validates one input file object; where prefixes messages
// about a file[] item.
func parseFileInput(c *column, where string, m map[string]any, item bool) (fileInput, error) {
	var f fileInput
	bad := func(format string, args ...any) (fileInput, error) {
		return fileInput{}, invalidf("column [%s]: %s%s", c.path, where, fmt.Sprintf(format, args...))
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
			if len(s) > maxFileBase64 {
				return bad("base64Content is longer than %d characters", maxFileBase64)
			}
			if _, err := decodeBase64(s); err != nil {
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
			if !ok || !validFileID(s) {
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

// validFileID reports whether s may name a file[] item: it goes into keys
// (no NUL) and URL paths.
func validFileID(s string) bool { return len(s) <= maxFileIDLen && fileIDPattern.MatchString(s) }

// decodeBase64 decodes standard base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	if strings.HasSuffix(s, "=") || len(s)%4 == 0 {
		return base64.StdEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// storedFiles decodes a stored file column value: one file or the items of
// a file[]. A pending value has no stored files.
func storedFiles(c *column, v codec.Value) []storedFile {
	if v.IsNull() || v.Kind != codec.KindString || strings.HasPrefix(v.Str, pendingFiles) {
		return nil
	}
	if c.Type == TypeFile {
		var f storedFile
		if json.Unmarshal([]byte(v.Str), &f) != nil {
			return nil
		}
		return []storedFile{f}
	}
	var l []storedFile
	if json.Unmarshal([]byte(v.Str), &l) != nil {
		return nil
	}
	return l
}

// storedValue encodes the files of a column as its record value; no files
// is null.
func storedValue(c *column, files []storedFile) codec.Value {
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

// newFileID returns the id of a new file: opaque, 26 alphanumerics, derived
// from what makes it unique (the commit, the record, the column and the
// position) so that applying a command stays deterministic.
func newFileID(db uint32, seq uint64, recordID string, col uint32, i int) string {
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

// setContent makes f describe new content written by commit seq.
func (f *storedFile) setContent(data []byte, seq uint64) {
	f.Seq, f.Size, f.Version = seq, int64(len(data)), f.Version+1
	f.Width, f.Height, f.Image = 0, 0, false
	if w, h, ok := imageSize(data); ok {
		f.Width, f.Height, f.Image = w, h, true
	}
}

// newStoredFile is a file with no content and the defaults of column c.
func newStoredFile(c *column, id string, seq uint64) storedFile {
	return storedFile{
		ID: id, MediaType: defaultFileType, Public: c.FilePublic != nil && *c.FilePublic,
		Signed: defaultSigned, Upload: defaultUpload, Seq: seq,
	}
}

// putFileContent writes the chunks of a file's content into a layer.
func putFileContent(b *pebble.Batch, db, layer, table, col uint32, id string, seq uint64, data []byte) error {
	for i := 0; i*fileChunkSize < len(data); i++ {
		chunk := data[i*fileChunkSize : min((i+1)*fileChunkSize, len(data))]
		if err := b.Set(codec.FileChunkKey(nil, db, layer, table, col, id, seq, uint16(i)), chunk, nil); err != nil {
			return err
		}
	}
	return nil
}

// readFileContent reads the content of a stored file: from the first layer
// of the lineage that holds it (content keys are written once, see
// codec/KEYS.md).
func readFileContent(r pebble.Reader, db uint32, lin lineage, table, col uint32, f *storedFile) ([]byte, error) {
	if f.Size == 0 {
		return []byte{}, nil
	}
	out := make([]byte, 0, f.Size)
	for _, lr := range lin {
		prefix := codec.FileContentPrefix(nil, db, lr.Layer, table, col, f.ID, f.Seq)
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
		if err != nil {
			return nil, err
		}
		for ok := it.First(); ok; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return nil, err
			}
			out = append(out, v...)
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
		if len(out) > 0 {
			break
		}
	}
	if int64(len(out)) != f.Size {
		return nil, errors.New("engine: file content missing or truncated")
	}
	return out, nil
}

// fileRef names one stored content.
type fileRef struct {
	col  uint32
	id   string
	seq  uint64
	size int64
}

// fileRefs lists the contents a record names.
func fileRefs(t *table, rec *codec.Record) map[fileRef]bool {
	if rec == nil {
		return nil
	}
	var out map[fileRef]bool
	for _, f := range rec.Fields {
		c := t.byID[f.Col]
		if c == nil || !isFileType(c.Type) {
			continue
		}
		for _, sf := range storedFiles(c, f.Val) {
			if out == nil {
				out = map[fileRef]bool{}
			}
			out[fileRef{col: c.ID, id: sf.ID, seq: sf.Seq, size: sf.Size}] = true
		}
	}
	return out
}

// writeFiles is the file part of writeRow: before the new version rec of a
// row (nil: a delete) replaces old, it resolves rec's pending file values,
// writing their new content, and deletes the content of the branch's top
// layer that old named, rec no longer does, and no fork can see.
func (w *writer) writeFiles(t *table, old, rec *codec.Record) error {
	if w.tx == nil {
		return nil
	}
	if rec != nil {
		for i := range rec.Fields {
			f := &rec.Fields[i]
			c := t.byID[f.Col]
			if c == nil || !isFileType(c.Type) || !strings.HasPrefix(f.Val.Str, pendingFiles) {
				continue
			}
			var prev codec.Value
			if old != nil {
				prev, _ = old.Get(c.ID)
			}
			v, err := w.resolveFiles(t, c, rec.ID, prev, f.Val.Str[len(pendingFiles):])
			if err != nil {
				return err
			}
			f.Val = v
		}
	}
	before := fileRefs(t, old)
	if len(before) == 0 {
		return nil
	}
	after := fileRefs(t, rec)
	for r := range before {
		if !after[r] {
			if err := w.dropFileContent(t, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolveFiles turns the pending input of column c into stored files: a
// file named by a known id (the file column's one file) keeps its content
// and settings unless the input changes them; other files are new.
func (w *writer) resolveFiles(t *table, c *column, recordID string, prev codec.Value, pending string) (codec.Value, error) {
	var items []fileInput
	if err := json.Unmarshal([]byte(pending), &items); err != nil {
		return codec.Value{}, err
	}
	tx := w.tx
	olds := storedFiles(c, prev)
	byID := map[string]storedFile{}
	for _, f := range olds {
		byID[f.ID] = f
	}
	out := make([]storedFile, 0, len(items))
	for i, in := range items {
		var f storedFile
		known := false
		switch {
		case c.Type == TypeFile && len(olds) > 0:
			f, known = olds[0], true
		case in.ID != "":
			f, known = byID[in.ID]
		}
		if !known {
			id := in.ID
			if id == "" {
				id = newFileID(tx.d.id, tx.seq, recordID, c.ID, i)
			}
			f = newStoredFile(c, id, tx.seq)
			f.Version = 1
		}
		f.Name = in.Name
		if in.MediaType != nil {
			f.MediaType = *in.MediaType
		}
		if in.Public != nil {
			f.Public = *in.Public
		}
		if in.Signed != nil {
			f.Signed = *in.Signed
		}
		if in.Upload != nil {
			f.Upload = *in.Upload
		}
		if in.Content != nil {
			data, err := decodeBase64(*in.Content)
			if err != nil {
				return codec.Value{}, invalidf("column [%s]: base64Content is not valid base64", c.path)
			}
			if !known {
				f.Version = 0
			}
			f.setContent(data, tx.seq)
			if err := putFileContent(tx.batch, tx.d.id, w.br.Lineage[0].Layer, t.ID, c.ID, f.ID, tx.seq, data); err != nil {
				return codec.Value{}, err
			}
		}
		out = append(out, f)
	}
	return storedValue(c, out), nil
}

// dropFileContent deletes a content from the branch's top layer when it is
// there and no fork of the layer may read it (it was written after the
// layer's newest fork point).
func (w *writer) dropFileContent(t *table, r fileRef) error {
	if r.size == 0 {
		return nil
	}
	tx := w.tx
	top := w.br.Lineage[0].Layer
	if forkSeq, forked := tx.state().forks[top]; forked && r.seq <= forkSeq {
		return nil
	}
	first := codec.FileChunkKey(nil, tx.d.id, top, t.ID, r.col, r.id, r.seq, 0)
	_, closer, err := tx.batch.Get(first)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil // written in a lower layer
	}
	if err != nil {
		return err
	}
	closer.Close()
	for i := int64(0); i*fileChunkSize < r.size; i++ {
		if err := tx.batch.Delete(codec.FileChunkKey(nil, tx.d.id, top, t.ID, r.col, r.id, r.seq, uint16(i)), nil); err != nil {
			return err
		}
	}
	return nil
}

// copyFileContents copies into layer the content of every file rec names,
// read from the lineage lin: flattening a lineage keeps the bytes its
// records name.
func copyFileContents(r pebble.Reader, b *pebble.Batch, db uint32, lin lineage, layer uint32, t *table, rec *codec.Record) error {
	for ref := range fileRefs(t, rec) {
		if ref.size == 0 {
			continue
		}
		f := storedFile{ID: ref.id, Seq: ref.seq, Size: ref.size}
		data, err := readFileContent(r, db, lin, t.ID, ref.col, &f)
		if err != nil {
			return err
		}
		if err := putFileContent(b, db, layer, t.ID, ref.col, ref.id, ref.seq, data); err != nil {
			return err
		}
	}
	return nil
}

// checkNoFiles rejects file values in bulk inserts and transactions
// (compat-api.md §3.4): content is written by single-record writes only.
func checkNoFiles(t *table, values map[string]any) error {
	var walk func(prefix string, m map[string]any) error
	walk = func(prefix string, m map[string]any) error {
		for _, k := range sortedKeys(m) {
			c := t.byPath[prefix+k]
			if c == nil {
				continue
			}
			switch {
			case c.Type == TypeObject:
				if sub, ok := m[k].(map[string]any); ok {
					if err := walk(c.path+".", sub); err != nil {
						return err
					}
				}
			case c.Type == TypeFile && m[k] != nil:
				return invalidf("column [%s]: file upload not permitted in transaction", c.path)
			case c.Type == TypeFileArray && m[k] != nil:
				if l, ok := m[k].([]any); ok && len(l) == 0 {
					continue
				}
				return invalidf("column [%s]: file entry [0]: file upload not permitted in transaction", c.path)
			}
		}
		return nil
	}
	return walk("", values)
}
