package server

import (
	"encoding/base64"
	"testing"

	"github.com/google/uuid"
)

// The values written out so that no start computes them are the ones their
// derivations give.

func TestOwnerNamespace(t *testing.T) {
	if want := uuid.NewSHA1(uuid.NameSpaceURL, []byte(ownerNamespaceURL)); ownerNamespace != want {
		t.Errorf("ownerNamespace = %s, want %s", ownerNamespace, want)
	}
}

func TestJWTHeaderEncoding(t *testing.T) {
	if want := base64.RawURLEncoding.EncodeToString([]byte(jwtHeaderJSON)); jwtHeader != want {
		t.Errorf("jwtHeader = %q, want %q", jwtHeader, want)
	}
}
