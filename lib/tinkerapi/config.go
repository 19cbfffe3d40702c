package tinkerapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// DefaultBaseURL is the production service (docs/protocol.md).
const DefaultBaseURL = "https://tinker.thinkingmachines.dev/services/tinker-prod"

// SDKVersion is the Python SDK version announced to the server; the server
// resolves feature flags from it, so it must be a Python SDK version.
const SDKVersion = "0.25.0"

// Defaults for the zero values of Config.
const (
	DefaultMaxRetryTime   = 2 * time.Minute
	DefaultMaxRetries     = 10 // the SDK's: 11 attempts in all
	DefaultRequestTimeout = 60 * time.Second
	DefaultRetryBaseDelay = 500 * time.Millisecond
	DefaultRetryMaxDelay  = 10 * time.Second
)

// Config configures a Client. Zero values mean the defaults above.
type Config struct {
	BaseURL       string // empty: DefaultBaseURL
	APIKey        string // tml-… API key or eyJ… JWT, sent as X-API-Key
	CredentialCmd string // sh -c command printing a credential (TINKER_CREDENTIAL_CMD)

	// Cloudflare Access service token, sent as CF-Access-Client-Id/-Secret.
	CFAccessClientID, CFAccessClientSecret string

	HTTPClient *http.Client // its CheckRedirect is replaced: redirects are never followed
	// UserAgent names the program and its version; empty: UserAgent("dev").
	UserAgent string

	MaxRetryTime   time.Duration // total time one call may spend retrying
	MaxRetries     int           // retries of one call after its first attempt
	RequestTimeout time.Duration // per attempt, headers and body
	RetryBaseDelay time.Duration // first backoff; doubles per retry
	RetryMaxDelay  time.Duration // backoff cap (a server's Retry-After ≤ 60 s wins)

	// Sleep waits d before a retry or the next poll, or until ctx is done;
	// every wait of the client goes through it. Nil: a timer. A program
	// that records its waits (the wire tests) passes its own.
	Sleep func(ctx context.Context, d time.Duration) error

	// Logf receives one line per retry, refresh failure and similar event.
	// Lines never contain credentials.
	Logf func(format string, args ...any)
}

// ConfigFromEnv reads TINKER_API_KEY, TINKER_BASE_URL, TINKER_CREDENTIAL_CMD
// and the Cloudflare Access pair (docs/protocol.md, "Authentication"). getenv
// is normally os.Getenv (nil means that); tests pass their own.
func ConfigFromEnv(getenv func(string) string) Config {
	if getenv == nil {
		getenv = os.Getenv
	}
	return Config{
		BaseURL:              getenv("TINKER_BASE_URL"),
		APIKey:               getenv("TINKER_API_KEY"),
		CredentialCmd:        getenv("TINKER_CREDENTIAL_CMD"),
		CFAccessClientID:     getenv("CLOUDFLARE_ACCESS_CLIENT_ID"),
		CFAccessClientSecret: getenv("CLOUDFLARE_ACCESS_CLIENT_SECRET"),
	}
}

// String keeps credentials out of %v and %+v output.
func (c Config) String() string {
	return fmt.Sprintf("tinkerapi.Config{BaseURL:%q APIKey:%s CredentialCmd:%s}",
		c.BaseURL, redactedIfSet(c.APIKey), redactedIfSet(c.CredentialCmd))
}

// GoString keeps credentials out of %#v output.
func (c Config) GoString() string { return c.String() }

func redactedIfSet(s string) string {
	if s == "" {
		return `""`
	}
	return "[REDACTED]"
}

// ConfigError is a problem with the client configuration found before any
// request. Its message matches the official SDK's where one exists.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// Messages of the official SDK (docs/compat.md, "Startup and credentials").
const (
	msgNoAPIKey  = "The api_key client option must be set either by passing api_key to the client or by setting the TINKER_API_KEY environment variable"
	msgBadPrefix = "The api_key must start with the 'tml-' prefix"
)

// checkKey is the SDK's client-side prefix check.
func checkKey(key string) error {
	if strings.HasPrefix(key, "tml-") || isJWT(key) {
		return nil
	}
	return &ConfigError{Msg: msgBadPrefix}
}

func isJWT(s string) bool { return strings.HasPrefix(s, "eyJ") }

// normalize validates cfg and fills in defaults.
func (cfg Config) normalize() (Config, string, error) {
	cfg.APIKey = strings.TrimSpace(cfg.APIKey)
	cfg.CredentialCmd = strings.TrimSpace(cfg.CredentialCmd)
	switch {
	case cfg.APIKey != "":
		if err := checkKey(cfg.APIKey); err != nil {
			return cfg, "", err
		}
	case cfg.CredentialCmd == "":
		return cfg, "", &ConfigError{Msg: msgNoAPIKey}
	}
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return cfg, "", &ConfigError{Msg: fmt.Sprintf("invalid base URL %q: want http(s)://host[/prefix]; check TINKER_BASE_URL", shownURL(base))}
	}
	if u.User != nil {
		return cfg, "", &ConfigError{Msg: "the base URL must not contain credentials; use TINKER_API_KEY"}
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = UserAgent("dev")
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	setDefault(&cfg.MaxRetryTime, DefaultMaxRetryTime)
	setDefault(&cfg.RequestTimeout, DefaultRequestTimeout)
	setDefault(&cfg.RetryBaseDelay, DefaultRetryBaseDelay)
	setDefault(&cfg.RetryMaxDelay, DefaultRetryMaxDelay)
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	// Endpoint paths are appended as strings: ResolveReference would drop
	// a path prefix such as /services/tinker-prod.
	return cfg, strings.TrimRight(base, "/"), nil
}

// shownURL is a base URL as an error may show it: credentials and the
// query (where a key may have been put) are replaced by <redacted>. It
// works on the text, as the URL may not parse.
func shownURL(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i+1] + "<redacted>"
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + 3
	}
	end := len(s)
	if i := strings.IndexAny(s[start:], "/?#"); i >= 0 {
		end = start + i
	}
	if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 {
		s = s[:start] + "<redacted>" + s[start+at:]
	}
	return s
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// UserAgent is the User-Agent of tinker at version: the program and its
// version first, then the SDK it speaks for, in the SDK's own form
// (AsyncTinker/Python 0.25.0), for a service that reads it.
func UserAgent(version string) string {
	return "tinker/" + version + " (Go; compatible; AsyncTinker/Python " + SDKVersion + ")"
}
