# The README's examples (golden/docexamples_test.go) pipe JSON into jq.
# As root with apt-get (CI), a missing jq is installed here.
.PHONY: doc-example-tools
TEST_DEPS += doc-example-tools

doc-example-tools:
	@if ! command -v jq >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq; \
	  else \
	    echo "the README example test needs jq: install it (apt-get install jq)" >&2; exit 1; \
	  fi; \
	fi
