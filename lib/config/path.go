package config

import "path/filepath"

// Path is where the config file lives: $XDG_CONFIG_HOME/tinker/config.toml,
// else $HOME/.config/tinker/config.toml; "" when neither variable gives a
// directory (a relative XDG_CONFIG_HOME is ignored, as the XDG base
// directory rules require). getenv is normally os.Getenv.
func Path(getenv func(string) string) string {
	if dir := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "tinker", "config.toml")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".config", "tinker", "config.toml")
	}
	return ""
}
