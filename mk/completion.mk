# Completion scripts are checked in real bash, zsh and fish
# (cmd/tinker/app/completion_test.go); a missing shell fails those tests.
# As root with apt-get (CI), the missing shells are installed here; otherwise
# make says what to install (mk/need-tools.sh).
.PHONY: completion-shells
TEST_DEPS += completion-shells

completion-shells:
	@if [ -z "$$TINKER_SKIP_MISSING_SHELLS" ]; then \
	  $(SHELL) mk/need-tools.sh "the completion tests run the completion scripts in real shells; or set TINKER_SKIP_MISSING_SHELLS=1 to skip them" bash zsh fish; \
	fi
