package engine

import (
	_ "image/gif"  // image.DecodeConfig reads GIF dimensions
	_ "image/jpeg" // and JPEG
	_ "image/png"  // and PNG
)

// File columns (compat-api.md §11). A record keeps, for each file, only its
// metadata as JSON (StoredFile): what queries read stays small. The bytes
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
