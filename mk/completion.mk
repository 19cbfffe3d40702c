# Completion scripts are checked in real bash, zsh and fish
# (cmd/tinker/app/completion_test.go); a missing shell fails those tests.
# As root with apt-get (CI), the missing shells are installed here.
.PHONY: completion-shells
TEST_DEPS += completion-shells

completion-shells:
	@missing=; for sh in bash zsh fish; do command -v $$sh >/dev/null || missing="$$missing $$sh"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "completion tests need:$$missing (install them, or set TINKER_SKIP_MISSING_SHELLS=1 to skip)" >&2; exit 1; \
	  fi; \
	fi
