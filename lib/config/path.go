package config

import (
	"errors"
	"path/filepath"
)

// Path is where the config file lives: $XDG_CONFIG_HOME/tinker/config.toml,
// else $HOME/.config/tinker/config.toml. A relative XDG_CONFIG_HOME is
// ignored, as the XDG base directory rules require. getenv is normally
// os.Getenv.
func Path(getenv func(string) string) (string, error) {
	if dir := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "tinker", "config.toml"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("cannot locate the config file: set HOME or XDG_CONFIG_HOME")
	}
	return filepath.Join(home, ".config", "tinker", "config.toml"), nil
}
