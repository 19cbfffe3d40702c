package server

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/google/uuid"
)

// Each API key is a user, named by a URN derived from the key's SHA-256;
// only that hash is stored. See docs/protocol.md, "Authentication".
//
// ownerNamespace seeds those URNs and the ids derived per owner: the
// name-based UUID of ownerNamespaceURL, written out so no start computes
// it (TestOwnerNamespace derives it).
var ownerNamespace = uuid.UUID{0xbe, 0xb7, 0xec, 0x95, 0xf5, 0xf1, 0x5a, 0xd2, 0x8e, 0xd3, 0x60, 0x07, 0x03, 0x3a, 0xfa, 0xa4}

const ownerNamespaceURL = "https://github.com/tinkershell/tinker/local-user"

func hashKey(k string) string {
	h := sha256.Sum256([]byte(k))
	return hex.EncodeToString(h[:])
}

// LocalUserKey is the API key of the local user: tinker --local always
// acts as this user, and manifests without an owner import into its data.
// It is a name, not a secret: a server that must keep users apart is given
// explicit keys.
const LocalUserKey = "tml-local-user"

// OwnerURN is the model_owner URN of the user holding an API key.
func OwnerURN(apiKey string) string {
	h := sha256.Sum256([]byte(apiKey))
	return "tml:organization_user:" + uuid.NewSHA1(ownerNamespace, h[:]).String()
}

func (s *Server) authenticate(r *http.Request) (string, *errorResponse) {
	key := r.Header.Get("X-API-Key")
	if key == "" {
		return "", errorf(http.StatusUnauthorized, "Missing API key: send it in the X-API-Key header")
	}
	if s.opts.JWT && isJWTCredential(key) {
		return s.verifyJWT(key)
	}
	h := hashKey(key)
	if v, ok := s.authCache.Load(h); ok {
		return v.(string), nil
	}
	if len(s.keys) > 0 {
		if !s.keys[h] {
			return "", errorf(http.StatusUnauthorized, "Invalid API key")
		}
	} else if !strings.HasPrefix(key, "tml-") {
		return "", errorf(http.StatusUnauthorized, "Invalid API key: this local server accepts keys starting with tml-")
	}
	urn := OwnerURN(key)
	if err := s.st.EnsureUser(urn, h, s.now()); err != nil {
		return "", storeFailure("record user", err)
	}
	s.authCache.Store(h, urn)
	return urn, nil
}
