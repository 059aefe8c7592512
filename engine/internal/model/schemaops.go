package model

import "strings"

// RemoveTable removes a table that no other table links to.
func (s *Schema) RemoveTable(name string) error {
	t, err := s.Table(name)
	if err != nil {
		return err
	}
	for _, other := range s.Tables {
		if other == t {
			continue
		}
		for _, c := range other.Leaves {
			if c.Type == TypeLink && c.LinkTable == t.ID {
				return Invalidf("table [%s] is linked from column [%s] of table [%s]", name, c.Path, other.Name)
			}
		}
	}
	kept := s.Tables[:0]
	for _, x := range s.Tables {
		if x != t {
			kept = append(kept, x)
		}
	}
	s.Tables = kept
	return nil
}

// RenameTable renames a table; keys carry ids, so no data moves.
func (s *Schema) RenameTable(name, newName string) error {
	if err := CheckName("table", newName); err != nil {
		return err
	}
	t, err := s.Table(name)
	if err != nil {
		return err
	}
	for _, o := range s.Tables {
		if o != t && strings.EqualFold(o.Name, newName) {
			return Errorf(CodeAlreadyExists, "table [%s] already exists", newName)
		}
	}
	t.Name = newName
	return nil
}

// RemoveColumn removes a column (an object column with all its
// sub-columns).
func (s *Schema) RemoveColumn(tableName, path string) error {
	t, err := s.Table(tableName)
	if err != nil {
		return err
	}
	if t.ByPath[path] == nil {
		return NotFoundf("column [%s] not found", path)
	}
	removeColumn(&t.Columns, "", path)
	return nil
}

// removeColumn removes the column at path from cols, looking into the
// objects path goes through.
func removeColumn(cols *[]*Column, prefix, path string) bool {
	for i, c := range *cols {
		p := prefix + c.Name
		if p == path {
			*cols = append((*cols)[:i:i], (*cols)[i+1:]...)
			return true
		}
		if c.Type == TypeObject && strings.HasPrefix(path, p+".") {
			return removeColumn(&c.Columns, p+".", path)
		}
	}
	return false
}

// RenameColumn renames the column at a dotted path: its last element
// becomes newName.
func (s *Schema) RenameColumn(tableName, path, newName string) error {
	if err := CheckName("column", newName); err != nil {
		return err
	}
	t, err := s.Table(tableName)
	if err != nil {
		return err
	}
	c := t.ByPath[path]
	if c == nil {
		return NotFoundf("column [%s] not found", path)
	}
	sibling := path[:len(path)-len(c.Name)] + newName
	if t.ByPath[sibling] != nil {
		return Invalidf("column [%s] already exists", sibling)
	}
	if !strings.Contains(path, ".") && (newName == "id" || newName == "svc" || newName == "xata") {
		return Invalidf("column name [%s] is reserved", newName)
	}
	c.Name = newName
	return nil
}
