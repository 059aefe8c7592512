package model

import (
	"bytes"
	"encoding/json"
	"math"
	"net/mail"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coppice-db/coppice/codec"
)

// Link is an un-expanded link value: the id of the linked record.
type Link struct {
	ID string
}

// JSONText is the value of a json column: compact JSON text with sorted
// object keys.
type JSONText string

// maxStringLen is the most characters a string column holds.
const maxStringLen = 2048

func jsonNumber(s string) json.Number { return json.Number(s) }

// ValidEmail reports whether s is one plain address (no display name).
func ValidEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == "" && strings.Contains(s, "@")
}

// ToValue converts an input value (as encoding/json decodes it with
// UseNumber, or a plain Go value) to a stored value of column c.
func ToValue(c *Column, in any) (codec.Value, error) {
	if in == nil {
		return codec.Null(), nil
	}
	bad := func(want string) (codec.Value, error) {
		return codec.Value{}, Invalidf("column [%s]: invalid value: expected %s", c.Path, want)
	}
	switch c.Type {
	case TypeBool:
		b, ok := in.(bool)
		if !ok {
			return bad("a bool")
		}
		return codec.Bool(b), nil
	case TypeInt:
		switch n := in.(type) {
		case json.Number:
			if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
				return codec.Int(i), nil
			}
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return bad("an integer")
			}
			return codec.Int(int64(f)), nil
		case int:
			return codec.Int(int64(n)), nil
		case int64:
			return codec.Int(n), nil
		case float64:
			if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
				return bad("an integer")
			}
			return codec.Int(int64(n)), nil
		}
		return bad("an integer")
	case TypeFloat:
		switch n := in.(type) {
		case json.Number:
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil || math.IsInf(f, 0) {
				return bad("a number")
			}
			return codec.Float(f), nil
		case float64:
			if math.IsNaN(n) || math.IsInf(n, 0) {
				return bad("a finite number")
			}
			return codec.Float(n), nil
		case int:
			return codec.Float(float64(n)), nil
		case int64:
			return codec.Float(float64(n)), nil
		}
		return bad("a number")
	case TypeString, TypeText, TypeEmail:
		s, ok := in.(string)
		if !ok {
			return bad("a string")
		}
		if !utf8.ValidString(s) {
			return bad("valid UTF-8")
		}
		if c.Type == TypeString && utf8.RuneCountInString(s) > maxStringLen {
			return codec.Value{}, Invalidf("column [%s]: string is longer than %d characters", c.Path, maxStringLen)
		}
		if c.Type == TypeEmail && !ValidEmail(s) {
			return codec.Value{}, Invalidf("column [%s]: invalid email address [%s]", c.Path, s)
		}
		return codec.String(s), nil
	case TypeDatetime:
		switch t := in.(type) {
		case string:
			tm, err := time.Parse(time.RFC3339Nano, t)
			if err != nil {
				return bad("an RFC 3339 datetime")
			}
			return codec.Datetime(tm), nil
		case time.Time:
			return codec.Datetime(t), nil
		}
		return bad("an RFC 3339 datetime")
	case TypeMultiple:
		var out []string
		switch l := in.(type) {
		case []string:
			out = append([]string(nil), l...)
		case []any:
			out = make([]string, 0, len(l))
			for _, x := range l {
				s, ok := x.(string)
				if !ok {
					return bad("an array of strings")
				}
				out = append(out, s)
			}
		default:
			return bad("an array of strings")
		}
		return codec.Strings(out), nil
	case TypeVector:
		var out []float64
		switch l := in.(type) {
		case []float64:
			out = append([]float64(nil), l...)
		case []any:
			out = make([]float64, 0, len(l))
			for _, x := range l {
				var f float64
				switch n := x.(type) {
				case json.Number:
					v, err := strconv.ParseFloat(string(n), 64)
					if err != nil {
						return bad("an array of numbers")
					}
					f = v
				case float64:
					f = n
				default:
					return bad("an array of numbers")
				}
				out = append(out, f)
			}
		default:
			return bad("an array of numbers")
		}
		if len(out) != c.Dimension {
			return codec.Value{}, Invalidf("column [%s]: vector has %d dimensions, want %d", c.Path, len(out), c.Dimension)
		}
		return codec.Vector(out), nil
	case TypeLink:
		switch l := in.(type) {
		case string:
			if err := CheckRecordID(l); err != nil {
				return codec.Value{}, Invalidf("column [%s]: %s", c.Path, err.Error())
			}
			return codec.String(l), nil
		case map[string]any:
			if id, ok := l["id"].(string); ok && len(l) <= 2 {
				return ToValue(c, id)
			}
		case Link:
			return ToValue(c, l.ID)
		}
		return bad("a record id")
	case TypeJSON:
		if s, ok := in.(string); ok {
			var v any
			d := json.NewDecoder(strings.NewReader(s))
			d.UseNumber()
			if err := d.Decode(&v); err != nil || d.More() {
				return bad("JSON text")
			}
			in = v
		}
		b, err := canonicalJSON(in)
		if err != nil {
			return bad("JSON")
		}
		return codec.String(string(b)), nil
	case TypeFile, TypeFileArray:
		// Validated here, stored by writeRow (files.go).
		return toFileValue(c, in)
	}
	return bad("a value")
}

// canonicalJSON encodes v compactly; encoding/json sorts map keys.
func canonicalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// FromValue converts a stored value of column c to its output form: bool,
// int64, float64, string, time.Time, []string, []float64, Link, JSONText,
// File (file) or []File (file[]).
func FromValue(c *Column, v codec.Value) any {
	switch c.Type {
	case TypeBool:
		return v.Int != 0
	case TypeInt:
		return v.Int
	case TypeFloat:
		return v.Float
	case TypeDatetime:
		return v.Time()
	case TypeMultiple:
		return append([]string{}, v.Strs...)
	case TypeVector:
		return append([]float64{}, v.Vec...)
	case TypeLink:
		return Link{ID: v.Str}
	case TypeJSON:
		return JSONText(v.Str)
	case TypeFile, TypeFileArray:
		return fromFileValue(c, v)
	}
	return v.Str
}
