// Package files stores the content of the files of records' file and
// file[] columns, and names one version of one file by an access id that
// URLs carry, signed when the file is not public. A record keeps only the
// description of each file (model.StoredFile); its bytes live under a key
// family of their own in the layer of the commit that wrote them
// (codec/KEYS.md, "File contents").
package files
