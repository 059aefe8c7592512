package files

import "github.com/coppice-db/coppice/engine/internal/model"

// FileColumn resolves the column of a target: 404 when the table has no
// such column, 400 when it holds no files.
func FileColumn(t *model.Table, name string) (*model.Column, error) {
	c := t.ByPath[name]
	if c == nil {
		return nil, model.NotFoundf("column [%s] not found", name)
	}
	if !model.IsFileType(c.Type) {
		return nil, model.Invalidf("column [%s] is not a file column", name)
	}
	return c, nil
}

// PickFile finds the target's file among the files of c: its index, or -1
// when there is none yet. It enforces which routes each kind of column
// takes.
func PickFile(c *model.Column, files []model.StoredFile, tg model.FileTarget) (int, error) {
	if c.Type == model.TypeFile {
		if tg.Item && tg.FileID != "" {
			return 0, model.Invalidf("column [%s] is a file column: its file has no id, use .../file", c.Path)
		}
		if len(files) == 0 {
			return -1, nil
		}
		return 0, nil
	}
	if !tg.Item {
		return 0, model.Invalidf("column [%s] is a file[] column: name an item with .../file/{fileId}", c.Path)
	}
	if tg.FileID == "" {
		return -1, nil
	}
	for i := range files {
		if files[i].ID == tg.FileID {
			return i, nil
		}
	}
	return -1, nil
}
