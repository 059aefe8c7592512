package api

import (
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/coppice-db/coppice/engine"
)

// Bootstrap identities: the first user is an administrator with a fixed
// email; the workspace and the key carry fixed names.
const (
	BootstrapEmail     = "admin@localhost"
	BootstrapWorkspace = "coppice"
	BootstrapKeyName   = "bootstrap"
)

// BootstrapInfo is what a first start creates. Key is the API key secret,
// shown only once.
type BootstrapInfo struct {
	UserID      string
	Email       string
	WorkspaceID string // public id: {slug}-{core}
	Workspace   string // core id
	Key         string
	// KeyGiven is set when Key came from COPPICE_BOOTSTRAP_KEY: the
	// operator knows it, and Print does not show it.
	KeyGiven bool
}

// Bootstrap creates the first user, a workspace it owns and an API key, in
// one command: a start that fails half way leaves nothing behind. A
// non-empty key is used as the secret (COPPICE_BOOTSTRAP_KEY), else one is
// generated. The key is not scoped to the workspace: while the user belongs
// to that one workspace only, the plain base URL form resolves to it
// (compat-api.md §2.2).
func Bootstrap(eng *engine.Engine, key string) (*BootstrapInfo, error) {
	if err := CheckBootstrapKey(key); err != nil {
		return nil, err
	}
	res, err := eng.Accounts().Bootstrap(engine.BootstrapRequest{
		User:      engine.NewUser{Email: BootstrapEmail, Fullname: "Administrator", Admin: true},
		Workspace: BootstrapWorkspace, KeyName: BootstrapKeyName, Key: key,
	})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	return &BootstrapInfo{UserID: res.User.ID, Email: res.User.Email, WorkspaceID: res.Workspace.ID(),
		Workspace: res.Workspace.Core, Key: res.Key.Secret, KeyGiven: key != ""}, nil
}

// BootstrappedWith returns the first accounts when a bootstrap with key
// created them: the key authenticates as the bootstrap key of the
// bootstrap user, who owns one workspace. A cluster's bootstrap whose
// answer timed out may still apply; its key, chosen before the request,
// finds what it created.
func BootstrappedWith(eng *engine.Engine, key string) (*BootstrapInfo, bool) {
	u, k, err := eng.Accounts().Authenticate(key)
	if err != nil || k.Name != BootstrapKeyName || u.Email != BootstrapEmail {
		return nil, false
	}
	ws := eng.Accounts().ListWorkspaces(u.ID)
	if len(ws) != 1 {
		return nil, false
	}
	return &BootstrapInfo{UserID: u.ID, Email: u.Email, WorkspaceID: ws[0].ID, Workspace: ws[0].Core, Key: key}, true
}

// MinBootstrapKeyLen is the shortest COPPICE_BOOTSTRAP_KEY accepted: a key
// anyone could guess would open the administrator's account.
const MinBootstrapKeyLen = 16

// CheckBootstrapKey accepts an empty key (one is generated) or one of at
// least MinBootstrapKeyLen characters.
func CheckBootstrapKey(key string) error {
	if n := utf8.RuneCountInString(key); key != "" && n < MinBootstrapKeyLen {
		return fmt.Errorf("COPPICE_BOOTSTRAP_KEY must have at least %d characters, it has %d", MinBootstrapKeyLen, n)
	}
	return nil
}

// Print writes the bootstrap credentials for the operator.
func (b *BootstrapInfo) Print(w io.Writer) {
	fmt.Fprintf(w, "coppice: first start, created:\n")
	fmt.Fprintf(w, "  user       %s (%s)\n", b.Email, b.UserID)
	fmt.Fprintf(w, "  workspace  %s\n", b.WorkspaceID)
	if b.KeyGiven {
		fmt.Fprintf(w, "  API key    the one COPPICE_BOOTSTRAP_KEY holds\n")
		fmt.Fprintf(w, "Use it as: Authorization: Bearer <key>\n")
	} else {
		fmt.Fprintf(w, "  API key    %s\n", b.Key)
		fmt.Fprintf(w, "The key is shown only this once. Use it as: Authorization: Bearer <key>\n")
	}
	fmt.Fprintf(w, "Data-plane base URL: http://HOST:PORT/ws/%s\n", b.WorkspaceID)
	fmt.Fprintf(w, "Web console: http://HOST:PORT/console (sign in with the key)\n")
}
