# The README's examples (golden/docexamples_test.go) pipe JSON into jq.
# As root with apt-get (CI), a missing jq is installed here.
.PHONY: doc-example-tools
TEST_DEPS += doc-example-tools

doc-example-tools:
	@$(SHELL) mk/need-tools.sh "the README examples pipe JSON into jq" jq
