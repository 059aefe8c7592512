package transfer

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// The input formats of Import.
const (
	FormatNDJSON = "ndjson"
	FormatJSON   = "json"
	FormatCSV    = "csv"
)

// record is one record of the input, in input order.
type record struct {
	// line is the 1-based input line the record starts on.
	line int64
	// size is the number of input bytes the record took, with the blank
	// lines and separators before it.
	size int64
	// raw is the record as a JSON object (JSON inputs); cells are its
	// fields (CSV). Both are nil when the input could not be read as a
	// record, and bad says why. raw is valid until the next call of the
	// source's next: whoever keeps it copies it.
	raw   []byte
	cells []string
	bad   string
	// unchecked marks a raw whose shape alone was checked (oneObject):
	// the rest of its syntax is left to the store, and checkObject names
	// the problem when the store refuses it.
	unchecked bool
}

// source yields the records of one input format. next returns io.EOF
// after the last record; any other error means the input cannot be read
// further and the import stops.
type source interface {
	next() (record, error)
}

// detectFormat picks the format of an input: the given one, else by the
// file name's extension (.ndjson, .jsonl, .csv), else by its first
// non-blank byte: '[' is a JSON array, '{' NDJSON.
func detectFormat(format, name string, br *bufio.Reader) (string, error) {
	switch format {
	case FormatNDJSON, FormatJSON, FormatCSV:
		return format, nil
	case "":
	default:
		return "", fmt.Errorf("unknown format %q: want ndjson, json or csv", format)
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".ndjson", ".jsonl":
		return FormatNDJSON, nil
	case ".csv":
		return FormatCSV, nil
	}
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if len(b) < n {
			if err == nil || errors.Is(err, io.EOF) || errors.Is(err, bufio.ErrBufferFull) {
				return "", errors.New("cannot tell the input's format: set --format")
			}
			return "", err
		}
		switch c := b[n-1]; {
		case c == '[':
			return FormatJSON, nil
		case c == '{':
			return FormatNDJSON, nil
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || (n <= 3 && isBOM(b[:n])):
			continue
		default:
			return "", errors.New("cannot tell the input's format (it starts with neither [ nor {): set --format")
		}
	}
}

// isBOM reports whether b is a prefix of the UTF-8 byte order mark.
func isBOM(b []byte) bool { return bytes.HasPrefix([]byte("\xef\xbb\xbf"), b) }

// skipBOM drops a UTF-8 byte order mark at the start of the input and
// returns its length.
func skipBOM(br *bufio.Reader) int64 {
	if b, _ := br.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
		return 3
	}
	return 0
}

// checkObject returns why b is not one JSON object, or "".
func checkObject(b []byte) string {
	if json.Valid(b) {
		if b[0] != '{' {
			return "not a JSON object"
		}
		return ""
	}
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return "invalid JSON: " + err.Error()
	}
	return "invalid JSON"
}

// oneObject reports whether b, with no white space around it, has the
// shape of one JSON object: it starts with {, and the brackets and braces
// opened outside strings close for the first time at its last byte, a }.
// It leaves the rest of the syntax unchecked, but a line of that shape
// cannot run into the records next to it in a bulk body, and it is a
// fraction of the cost of json.Valid.
func oneObject(b []byte) bool {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i == len(b)-1
			}
		case '"':
			// The string ends at the next quote not escaped by an odd
			// run of backslashes.
			for {
				j := bytes.IndexByte(b[i+1:], '"')
				if j < 0 {
					return false
				}
				i += 1 + j
				k := i
				for b[k-1] == '\\' {
					k--
				}
				if (i-k)%2 == 0 {
					break
				}
			}
		}
	}
	return false
}

// ndjsonSource reads one JSON object per line. Blank lines are not
// records.
type ndjsonSource struct {
	br      *bufio.Reader
	line    int64
	pending int64 // bytes of blank lines (and the BOM) not yet counted
	buf     []byte
}

// newNDJSONSource reads NDJSON from br, past a byte order mark.
func newNDJSONSource(br *bufio.Reader) *ndjsonSource {
	return &ndjsonSource{br: br, pending: skipBOM(br)}
}

// next returns the next line that is not blank.
func (s *ndjsonSource) next() (record, error) {
	for {
		line, err := s.readLine()
		if len(line) == 0 && err != nil {
			return record{}, err
		}
		s.line++
		n := int64(len(line))
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			s.pending += n
			continue
		}
		rec := record{line: s.line, size: n + s.pending}
		s.pending = 0
		if oneObject(t) {
			rec.raw, rec.unchecked = t, true
		} else {
			rec.bad = checkObject(t)
		}
		return rec, nil
	}
}

// readLine returns the next line with its newline; the slice is valid
// until the next call. A last line without a newline comes with a nil
// error; after it, io.EOF.
func (s *ndjsonSource) readLine() ([]byte, error) {
	b, err := s.br.ReadSlice('\n')
	if err == nil || (errors.Is(err, io.EOF) && len(b) > 0) {
		return b, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	s.buf = append(s.buf[:0], b...)
	for {
		b, err = s.br.ReadSlice('\n')
		s.buf = append(s.buf, b...)
		if err == nil || errors.Is(err, io.EOF) {
			return s.buf, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// arraySource reads the elements of one JSON array, which may span any
// number of lines each. An element that is not a valid JSON object is a
// bad record; the array itself must be well formed (brackets, strings,
// commas), else reading stops at the first place it is not.
type arraySource struct {
	br      *bufio.Reader
	line    int64 // line of the next byte
	size    int64 // bytes read since the last record ended
	started bool
	done    bool
	buf     []byte
}

// newArraySource reads a JSON array from br, past a byte order mark.
func newArraySource(br *bufio.Reader) *arraySource {
	return &arraySource{br: br, line: 1, size: skipBOM(br)}
}

// readByte reads one byte, counting lines and bytes.
func (s *arraySource) readByte() (byte, error) {
	c, err := s.br.ReadByte()
	if err != nil {
		return 0, err
	}
	s.size++
	if c == '\n' {
		s.line++
	}
	return c, nil
}

// skipSpace reads up to the next byte that is not JSON white space and
// returns it.
func (s *arraySource) skipSpace() (byte, error) {
	for {
		c, err := s.readByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c, nil
		}
	}
}

// malformed is the error for an array that cannot be read further.
func (s *arraySource) malformed(err error, what string) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("line %d: the JSON array ends before its closing ]", s.line)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("line %d: %s", s.line, what)
}

// next returns the next element; the first call reads the opening [.
func (s *arraySource) next() (record, error) {
	if s.done {
		return record{}, io.EOF
	}
	c, err := s.skipSpace()
	if !s.started {
		if err != nil || c != '[' {
			return record{}, s.malformed(err, "the input is not a JSON array: it does not start with [")
		}
		s.started = true
		if c, err = s.skipSpace(); err == nil && c == ']' {
			s.done = true
			return record{}, io.EOF
		}
	} else {
		switch {
		case err != nil:
			return record{}, s.malformed(err, "")
		case c == ']':
			s.done = true
			return record{}, io.EOF
		case c != ',':
			return record{}, s.malformed(nil, fmt.Sprintf("expected , or ] after an array element, found %q", c))
		}
		c, err = s.skipSpace()
	}
	if err != nil {
		return record{}, s.malformed(err, "")
	}
	rec := record{line: s.line}
	s.buf = append(s.buf[:0], c)
	if err := s.readValue(c); err != nil {
		return record{}, err
	}
	rec.size, s.size = s.size, 0
	if rec.bad = checkObject(s.buf); rec.bad == "" {
		rec.raw = bytes.Clone(s.buf)
	}
	return rec, nil
}

// readValue reads the rest of a JSON value whose first byte, first, is
// already in s.buf: an object or array up to its matching bracket, a
// string up to its closing quote, any other value up to the next
// separator (left unread).
func (s *arraySource) readValue(first byte) error {
	depth, inString := 0, false
	switch first {
	case '{', '[':
		depth = 1
	case '"':
		inString = true
	default:
		for {
			b, err := s.br.Peek(1)
			if err != nil {
				return s.malformed(err, "")
			}
			if c := b[0]; c == ',' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
				return nil
			}
			c, _ := s.readByte()
			s.buf = append(s.buf, c)
		}
	}
	for {
		c, err := s.readByte()
		if err != nil {
			return s.malformed(err, "")
		}
		s.buf = append(s.buf, c)
		switch {
		case inString:
			switch c {
			case '\\':
				e, err := s.readByte()
				if err != nil {
					return s.malformed(err, "")
				}
				s.buf = append(s.buf, e)
			case '"':
				inString = false
				if depth == 0 {
					return nil
				}
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth == 0 {
				return nil
			}
		}
	}
}

// csvSource reads CSV whose first record is the header of column names.
// The header is line 1; a record's line is the line its first field
// starts on (a quoted field may span lines).
type csvSource struct {
	r      *csv.Reader
	header []string
	offset int64 // input offset after the last record (the header at first)
}

// newCSVSource reads the header.
func newCSVSource(br *bufio.Reader, delimiter rune) (*csvSource, error) {
	skipBOM(br)
	r := csv.NewReader(br)
	if delimiter != 0 {
		r.Comma = delimiter
	}
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("the CSV input is empty: it needs a header of column names")
	}
	if err != nil {
		return nil, fmt.Errorf("CSV header: %w", err)
	}
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, fmt.Errorf("CSV header: column %d has no name", i+1)
		}
		if seen[h] {
			return nil, fmt.Errorf("CSV header: column [%s] appears twice", h)
		}
		seen[h] = true
		header[i] = h
	}
	return &csvSource{r: r, header: header, offset: r.InputOffset()}, nil
}

// next returns the next CSV record; one that cannot be parsed or has
// the wrong number of fields is a bad record, and reading goes on.
func (s *csvSource) next() (record, error) {
	fields, err := s.r.Read()
	if errors.Is(err, io.EOF) {
		return record{}, io.EOF
	}
	end := s.r.InputOffset()
	rec := record{size: end - s.offset}
	s.offset = end
	var pe *csv.ParseError
	switch {
	case errors.As(err, &pe):
		rec.line = int64(pe.StartLine)
		rec.bad = pe.Err.Error()
		return rec, nil
	case err != nil:
		return record{}, err
	}
	line, _ := s.r.FieldPos(0)
	rec.line = int64(line)
	if len(fields) != len(s.header) {
		rec.bad = fmt.Sprintf("has %d fields, the header has %d", len(fields), len(s.header))
		return rec, nil
	}
	rec.cells = fields
	return rec, nil
}
