// Package config reads tinker's profile file and resolves the settings in
// force from flags, environment and the selected profile.
//
// The file is TOML, at $XDG_CONFIG_HOME/tinker/config.toml (default
// ~/.config/tinker/config.toml):
//
//	default_profile = "work"        # optional: used when no profile is named
//
//	[profiles.work]
//	base_url = "https://tinker.example.com/services/tinker-prod"
//	credential_command = "pass show tinker/work"
//	format = "json"                 # "table" or "json"
//
//	[profiles.laptop]
//	local = true                    # the in-process local server
//
// The file never holds an API key: a key comes from TINKER_API_KEY or from
// the output of credential_command, so Load refuses an api_key entry and
// any value that looks like a key.
//
// Precedence, highest first: a flag (--profile, --local, --format), then
// the environment (TINKER_PROFILE, TINKER_BASE_URL, TINKER_API_KEY,
// TINKER_CREDENTIAL_CMD), then the selected profile, then default_profile
// (for the profile name only), then the built-in default. The credential
// is taken as a whole: if the environment sets TINKER_API_KEY or
// TINKER_CREDENTIAL_CMD, the profile's credential_command is not used, so
// a key from one source is never refreshed with a command from another.
package config
