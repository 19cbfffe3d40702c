package server

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// KeysEnv names the environment variable that can hold the server's API
// keys, comma-separated, so they need not appear on the command line (where
// other local users can read them in the process list).
const KeysEnv = "TINKER_SERVE_API_KEYS"

// CollectAPIKeys gathers the accepted API keys from flags, a file (one key
// a line; blank lines and lines starting with # are skipped) and the value
// of KeysEnv. Keys are trimmed; an empty result means any tml- key is
// accepted. Errors never include a key.
func CollectAPIKeys(flags []string, file, env string) ([]string, error) {
	keys := append([]string{}, flags...)
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read API keys: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
				keys = append(keys, l)
			}
		}
	}
	for _, k := range strings.Split(env, ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	for i, k := range keys {
		if strings.TrimSpace(k) != k || k == "" || strings.ContainsFunc(k, func(r rune) bool { return r < 0x21 || r == 0x7f }) {
			return nil, fmt.Errorf("API key %d is empty or holds spaces or control characters", i+1)
		}
	}
	return keys, nil
}
