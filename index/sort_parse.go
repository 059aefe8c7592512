package index

// This file reads a sort expression against a table: the columns, their
// directions and the random tie-breaker.

import (
	"fmt"
	"sort"
)

// ParseSort reads a sort expression (spec §4.1.6): an array of column
// names, an object mapping columns to asc/desc, or an array of such
// objects; "*": "random" orders randomly, alone or as a tie-breaker.
func ParseSort(t *Table, raw any) (Order, error) {
	var o Order
	add := func(name string, dir any) error {
		d, ok := dir.(string)
		if !ok {
			return sortErrorf("sort order of [%s] must be a string", name)
		}
		if name == "*" {
			if d != "random" {
				return sortErrorf("column [*] can only be sorted randomly")
			}
			if o.Random {
				return sortErrorf("random sort given twice")
			}
			o.Random = true
			return nil
		}
		if o.Random {
			return sortErrorf("random sort must come last")
		}
		c, err := resolveColumn(t, name)
		if err != nil {
			return err
		}
		switch c.Type {
		case TypeJSON, TypeVector, TypeFile, TypeFileArray, TypeObject, TypeMultiple, TypeText:
			return sortErrorf("column [%s] of type %s cannot be sorted", name, c.Type)
		}
		switch d {
		case "asc":
			o.Keys = append(o.Keys, SortKey{Column: c})
		case "desc":
			o.Keys = append(o.Keys, SortKey{Column: c, Desc: true})
		case "random":
			return sortErrorf("only column [*] can be sorted randomly")
		default:
			return sortErrorf("sort order [%s] of column [%s] must be asc or desc", d, name)
		}
		return nil
	}
	addObject := func(m map[string]any) error {
		if len(m) != 1 {
			// Several keys in one object have no defined order: ask for
			// one per object.
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if len(m) == 0 {
				return sortErrorf("empty sort object")
			}
			for _, k := range keys {
				if err := add(k, m[k]); err != nil {
					return err
				}
			}
			return nil
		}
		for k, v := range m {
			return add(k, v)
		}
		return nil
	}
	switch s := raw.(type) {
	case nil:
	case string:
		if err := add(s, "asc"); err != nil {
			return o, err
		}
	case map[string]any:
		if err := addObject(s); err != nil {
			return o, err
		}
	case []any:
		for _, e := range s {
			switch e := e.(type) {
			case string:
				if err := add(e, "asc"); err != nil {
					return o, err
				}
			case map[string]any:
				if err := addObject(e); err != nil {
					return o, err
				}
			default:
				return o, sortErrorf("a sort entry must be a column name or an object")
			}
		}
	default:
		return o, sortErrorf("sort must be an array or an object")
	}
	return o, nil
}

// resolveColumn finds a sortable or selectable column by path, meta columns
// included.
func resolveColumn(t *Table, name string) (*Column, error) {
	switch name {
	case "id":
		return IDColumn, nil
	case t.Meta + ".version":
		return VersionColumn, nil
	case t.Meta + ".createdAt":
		return CreatedAtColumn, nil
	case t.Meta + ".updatedAt":
		return UpdatedAtColumn, nil
	}
	c := t.Columns[name]
	if c == nil {
		return nil, sortErrorf("column [%s]: column not found", name)
	}
	return c, nil
}

// sortErrorf makes an *InputError with the "sort: " prefix.
func sortErrorf(format string, args ...any) error {
	return &InputError{Message: "sort: " + fmt.Sprintf(format, args...)}
}
