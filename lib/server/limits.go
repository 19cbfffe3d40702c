package server

import (
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on what one request may ask for, in one place so every endpoint
// (the training ones too) holds to the same numbers. Each is checked before
// anything sized by the request is allocated, and a request beyond one is
// answered 400 naming the field and the limit; docs/protocol.md, "Limits",
// lists them.
const (
	// maxBodyBytes bounds every JSON request body; maxTrainingBodyBytes the
	// bodies of the training endpoints, whose datums carry tensors (clients
	// chunk them to about 5 MB).
	maxBodyBytes         = 8 << 20
	maxTrainingBodyBytes = 64 << 20

	maxNumSamples      = 1024    // asample num_samples
	maxPromptTokens    = 1 << 20 // tokens in one prompt (models bound it further by their context)
	maxMaxTokens       = 1 << 20 // sampling_params.max_tokens
	maxTopKLogprobs    = 1024    // topk_prompt_logprobs
	maxTargetWidth     = 1024    // K of cross_entropy's (N, K) target_tokens
	maxStopSequences   = 64      // sampling_params.stop entries
	maxPageLimit       = 10000   // limit on listings
	maxPageOffset      = 1 << 31 // offset on listings
	maxDatums          = 4096    // datums in one forward/forward_backward
	maxDatumTokens     = 1 << 17 // tokens of one datum (a model's context bounds it further)
	maxRequestTokens   = 1 << 21 // tokens over all datums of one forward/forward_backward
	maxTTLSeconds      = 100 * 365 * 24 * 3600
	maxLoraRank        = 1024
	maxNameLen         = 100 // checkpoint names, in bytes
	maxEscapedNameLen  = 200 // and as escaped for the file system
	maxIDLen           = 256 // ids sent back to the server (sessions, runs, futures)
	maxStringLen       = 1024
	maxMetadataEntries = 64 // user_metadata entries, tags
	maxFuturesPerUser  = 1024
)

// checkInt answers 400 when v is outside [lo, hi].
func checkInt(field string, v, lo, hi int64) *errorResponse {
	if v < lo || v > hi {
		return errorf(http.StatusBadRequest, "%s must be between %d and %d, got %d", field, lo, hi, v)
	}
	return nil
}

// checkTTL validates ttl_seconds (nil: never expires) and returns the
// expiry. The bound keeps now+ttl far from time.Duration's overflow.
func checkTTL(field string, ttl *int64, now time.Time) (*time.Time, *errorResponse) {
	if ttl == nil {
		return nil, nil
	}
	if e := checkInt(field, *ttl, 1, maxTTLSeconds); e != nil {
		return nil, e
	}
	t := now.Add(time.Duration(*ttl) * time.Second)
	return &t, nil
}

// checkText rejects user-supplied text the service would show to other
// users or write to terminals: invalid UTF-8, control characters (C0, DEL,
// C1) and the bidirectional overrides that reorder what a terminal shows.
func checkText(field, v string, maxLen int) *errorResponse {
	if len(v) > maxLen {
		return errorf(http.StatusBadRequest, "%s is longer than %d bytes", field, maxLen)
	}
	if !utf8.ValidString(v) {
		return errorf(http.StatusBadRequest, "%s is not valid UTF-8", field)
	}
	for _, r := range v {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || isBidiControl(r) {
			return errorf(http.StatusBadRequest, "%s must not contain control characters (found %U)", field, r)
		}
	}
	return nil
}

func isBidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// checkMetadata validates user_metadata: bounded in entries and length,
// keys and values plain text.
func checkMetadata(field string, m map[string]string) *errorResponse {
	if len(m) > maxMetadataEntries {
		return errorf(http.StatusBadRequest, "%s has %d entries; at most %d are allowed", field, len(m), maxMetadataEntries)
	}
	for k, v := range m {
		if e := checkText(field+" key", k, maxStringLen); e != nil {
			return e
		}
		if e := checkText(field+"["+k+"]", v, maxStringLen); e != nil {
			return e
		}
	}
	return nil
}

// checkList validates a list of short strings (session tags).
func checkList(field string, l []string) *errorResponse {
	if len(l) > maxMetadataEntries {
		return errorf(http.StatusBadRequest, "%s has %d entries; at most %d are allowed", field, len(l), maxMetadataEntries)
	}
	for _, v := range l {
		if e := checkText(field, v, maxStringLen); e != nil {
			return e
		}
	}
	return nil
}

// nameHostile are characters a checkpoint name may not hold: path
// separators, and characters that change a URL's meaning when a client
// puts the name into a path without escaping it.
const nameHostile = "/\\%?#"

// validName rejects checkpoint names that cannot be a tinker path segment,
// would escape the checkpoint directory, would be misread in a URL, or could
// not be shown safely.
func validName(n string) error {
	if n == "" || n == "." || n == ".." || strings.ContainsAny(n, nameHostile) {
		return errorf(http.StatusBadRequest, "invalid checkpoint name %q: use a non-empty name without / \\ %% ? #", n)
	}
	if e := checkText("checkpoint name", n, maxNameLen); e != nil {
		return e
	}
	// The name is a directory name once escaped, with a temporary prefix
	// and suffix while it is written; file names end at 255 bytes.
	if len(url.PathEscape(n)) > maxEscapedNameLen {
		return errorf(http.StatusBadRequest, "checkpoint name %q is too long: at most %d bytes once non-ASCII characters are escaped", n, maxEscapedNameLen)
	}
	return nil
}
