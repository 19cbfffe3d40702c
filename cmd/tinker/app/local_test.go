package app

import (
	"testing"

	"github.com/tinkershell/tinker/cmd/tinker/localapi"
	"github.com/tinkershell/tinker/cmd/tinker/localserver"
	"github.com/tinkershell/tinker/lib/server"
)

// The tests run tinker as tinker-local does, with the local server linked
// in; cmd/tinker-local's TestHandOver runs the two executables.
func init() { Local = localserver.Server{} }

// TestLocalAPIConstantsMatchServer keeps localapi's copies of lib/server's
// constants (tinker must not import lib/server for them) equal.
func TestLocalAPIConstantsMatchServer(t *testing.T) {
	if localapi.LocalUserKey != server.LocalUserKey || localapi.KeysEnv != server.KeysEnv {
		t.Fatalf("localapi has %q, %q; lib/server %q, %q", localapi.LocalUserKey, localapi.KeysEnv, server.LocalUserKey, server.KeysEnv)
	}
}
