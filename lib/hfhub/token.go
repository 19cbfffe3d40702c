package hfhub

import (
	"os"
	"path/filepath"
	"strings"
)

// hfHome is huggingface_hub's home: HF_HOME, else $XDG_CACHE_HOME/huggingface,
// else ~/.cache/huggingface.
func hfHome() string {
	if home := os.Getenv("HF_HOME"); home != "" {
		return home
	}
	xdg := os.Getenv("XDG_CACHE_HOME")
	if xdg == "" {
		if u, err := os.UserHomeDir(); err == nil {
			xdg = filepath.Join(u, ".cache")
		}
	}
	return filepath.Join(xdg, "huggingface")
}

// TokenFromEnv finds the Hub token the way the hf CLI does: HF_TOKEN, the
// older HUGGING_FACE_HUB_TOKEN, then the file `hf auth login` writes
// ($HF_TOKEN_PATH, else $HF_HOME/token). source names the variable or the
// file; both are empty when there is no token.
func TokenFromEnv() (token, source string) {
	for _, name := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if t := strings.TrimSpace(os.Getenv(name)); t != "" {
			return t, name
		}
	}
	path := os.Getenv("HF_TOKEN_PATH")
	if path == "" {
		path = filepath.Join(hfHome(), "token")
	}
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, path
		}
	}
	return "", ""
}
