# cordon build: `make` builds the binary, the library and the benchmark program (cordon-bench),
# `make demo` runs the demo, `make test` builds and runs every test in release mode and under
# ASan+UBSan, and the threaded ones under ThreadSanitizer. Relies on GNU make and scripts/deps.sh
# for the Debian packages.

MODE   ?= release
BUILD  := build/$(MODE)
CC     ?= cc
PKGS   := lmdb libmicrohttpd jansson cmocka libutf8proc libxxhash

CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
               -Iinclude -Isrc -pthread -MMD -MP
ifeq ($(MODE),asan)
CFLAGS_MODE := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
               -fno-sanitize-recover=all -DCDN_DEBUG=1
LDFLAGS_MODE := -fsanitize=address,undefined
else ifeq ($(MODE),tsan)
CFLAGS_MODE := -O1 -g -fsanitize=thread -fno-omit-frame-pointer -DCDN_DEBUG=1
LDFLAGS_MODE := -fsanitize=thread
else ifeq ($(MODE),fuzz)
CC := clang
CFLAGS_MODE := -O1 -g -fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer \
               -fno-sanitize-recover=all -DCDN_DEBUG=1
LDFLAGS_MODE := -fsanitize=address,undefined,fuzzer
else ifeq ($(MODE),fuzz-ubsan)
# The fuzz targets under UBSan alone, for long runs: several times the inputs a second of the
# ASan build where a target allocates much (docs/reliability.md, "Long fuzz runs").
CC := clang
CFLAGS_MODE := -O1 -g -fsanitize=undefined,fuzzer-no-link -fno-omit-frame-pointer \
               -fno-sanitize-recover=all -DCDN_DEBUG=1
LDFLAGS_MODE := -fsanitize=undefined,fuzzer
else ifeq ($(MODE),debug)
CFLAGS_MODE := -O0 -g -DCDN_DEBUG=1
else
CFLAGS_MODE := -O2 -g -DNDEBUG
endif
CFLAGS  := $(CFLAGS_BASE) $(CFLAGS_MODE) $(EXTRA_CFLAGS)
LDLIBS  := -llmdb -lroaring -lstemmer -lxxhash -ljansson -lutf8proc -lcurl -lm -pthread
# libcurl calls outside services: policy decision points (src/authz/pdp*.c) and, from the
# server, embedding endpoints. The server (src/http, in libcordon-http.a) adds libmicrohttpd
# and OpenSSL's libcrypto.
HTTP_LDLIBS := -lmicrohttpd -lcrypto
# Only the benchmark program links SQLite (the FTS5 peer of `cordon bench text`).
BENCH_LDLIBS := -lsqlite3 $(LDLIBS)
LDFLAGS := $(LDFLAGS_MODE)

LIB_SRC   := $(filter-out src/cli/% src/http/%,$(wildcard src/*/*.c))
HTTP_SRC  := $(wildcard src/http/*.c)
CLI_SRC   := $(wildcard src/cli/*.c)
BENCH_SRC := $(wildcard bench/*.c)
TEST_SRC  := $(wildcard tests/unit/*/test_*.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
# What the server carries besides its code: docs/api/openapi.json, which GET /v1/openapi.json
# answers, as a C array that scripts/embed-file.sh writes (rebuilt when the document changes).
GEN_OBJ   := $(BUILD)/gen/openapi.o
HTTP_OBJ  := $(HTTP_SRC:%.c=$(BUILD)/%.o) $(GEN_OBJ)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/%.o)
BENCH_OBJ := $(BENCH_SRC:%.c=$(BUILD)/%.o)
TEST_BIN  := $(TEST_SRC:%.c=$(BUILD)/%)
# The tests that run threads against each other, also run under ThreadSanitizer (MODE=tsan).
TSAN_TESTS := api/test_audit api/test_asof api/test_compact_race api/test_race_states api/test_adversarial_race api/test_model api/test_leak_hunt \
              authz/test_authz_concurrency vector/test_hnsw_concurrency vector/test_hnsw_lists vector/test_hnsw_repair \
              vector/test_quant vector/test_quant_bits acl/test_acl_index text/test_bm25 text/test_fscache \
              base/test_pool http/test_keys http/test_metrics http/test_index_cache store/test_store_trim \
              store/test_store_compact
TSAN_BIN  := $(TSAN_TESTS:%=$(BUILD)/tests/unit/%)
# libFuzzer targets (MODE=fuzz, clang): a fixed set of inputs each in make test.
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN  := $(FUZZ_SRC:%.c=$(BUILD)/%)
FUZZ_SECONDS ?= 60
SHARED_DATA ?= $(abspath ../shared/data)

.PHONY: all cordon-bench deps bench-deps demo test unit check-unit check-tsan check-fuzz fuzz \
        structure-check format-check clean format
all: $(BUILD)/cordon $(BUILD)/libcordon.a $(BUILD)/libcordon-http.a $(BUILD)/cordon-bench

# The benchmarks, a program of their own that `cordon bench NAME` runs from beside the binary.
cordon-bench: $(BUILD)/cordon-bench

deps:
	@bash scripts/deps.sh

# The benchmarks' extra corpora and peers (Fashion-MNIST, hnswlib, FAISS, matplotlib, node).
bench-deps: deps
	@bash scripts/deps.sh --bench

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/gen/openapi.c: docs/api/openapi.json scripts/embed-file.sh
	@mkdir -p $(dir $@)
	bash scripts/embed-file.sh $< v1_openapi_json >$@.tmp && mv $@.tmp $@

$(BUILD)/gen/openapi.o: $(BUILD)/gen/openapi.c
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libcordon.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libcordon-http.a: $(HTTP_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/cordon: $(CLI_OBJ) $(BUILD)/libcordon-http.a $(BUILD)/libcordon.a
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libcordon-http.a $(BUILD)/libcordon.a $(HTTP_LDLIBS) $(LDLIBS)

$(BUILD)/cordon-bench: $(BENCH_OBJ) $(BUILD)/libcordon.a
	$(CC) $(LDFLAGS) -o $@ $(BENCH_OBJ) $(BUILD)/libcordon.a $(BENCH_LDLIBS)

$(BUILD)/tests/unit/%: tests/unit/%.c $(BUILD)/libcordon-http.a $(BUILD)/libcordon.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -o $@ $< $(BUILD)/libcordon-http.a $(BUILD)/libcordon.a $(HTTP_LDLIBS) \
	  $(LDLIBS) -lcmocka $(LDFLAGS)

$(BUILD)/tests/fuzz/%: tests/fuzz/%.c $(BUILD)/libcordon-http.a $(BUILD)/libcordon.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libcordon-http.a $(BUILD)/libcordon.a $(HTTP_LDLIBS) \
	  $(LDLIBS) $(LDFLAGS)

# A FUSE file system whose syncs fail on demand, for the wire test of failing fsyncs.
FAULTFS := $(BUILD)/tests/faultfs/faultfs
$(FAULTFS): tests/faultfs/faultfs.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $$(pkg-config --cflags fuse3) -o $@ $< $$(pkg-config --libs fuse3) $(LDFLAGS)

unit: $(TEST_BIN) $(BUILD)/cordon $(BUILD)/cordon-bench $(FAULTFS)

# Runs every unit test binary of this MODE; prints one closing line with the counts.
check-unit: unit
	@CORDON_SHARED_DATA=$(SHARED_DATA) CORDON_BIN=$(abspath $(BUILD)/cordon) \
	  bash scripts/run-tests.sh $(MODE) $(TEST_BIN)
	@CORDON_BIN=$(abspath $(BUILD)/cordon) bash scripts/run-tests.sh --pytest $(MODE)

# The threaded tests under ThreadSanitizer (run with MODE=tsan): any report fails the test;
# then the server built so, under the wire tests that run it hardest from many threads (a
# report stops it with a non-zero status, which fails the test that started it).
TSAN_WIRE := tests/http/test_leak_hunt.py tests/http/test_hostile.py tests/http/test_v1.py
check-tsan: $(TSAN_BIN) $(BUILD)/cordon
	@TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" CORDON_SHARED_DATA=$(SHARED_DATA) \
	  bash scripts/run-tests.sh $(MODE) $(TSAN_BIN)
	@TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" CORDON_BIN=$(abspath $(BUILD)/cordon) \
	  bash scripts/run-tests.sh --pytest $(MODE) $(TSAN_WIRE)

# The fuzz targets (run with MODE=fuzz): a crash, a sanitizer report or a broken invariant
# fails, and the input is kept under build/fuzz/crashes. check-fuzz runs a fixed set of inputs
# (seed 1, from the committed seeds), the same on every machine; fuzz explores for
# FUZZ_SECONDS each and keeps what it learns in build/fuzz/corpus.
check-fuzz: $(FUZZ_BIN)
	@bash scripts/fuzz.sh --fixed $(FUZZ_BIN)

fuzz: $(FUZZ_BIN)
	@bash scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_BIN)

# No circle among the files of a src/ folder and no edge up a layer (docs/internals/structure.md).
structure-check:
	@$(MAKE) --no-print-directory MODE=release all
	@bash scripts/structure.sh build/release

demo: deps
	@$(MAKE) --no-print-directory MODE=release all
	rm -rf build/demo-data
	./build/release/cordon demo --data build/demo-data --serve --listen $${CORDON_LISTEN:-127.0.0.1:9200}

test: deps
	@rm -f build/test-results.txt
	@$(MAKE) --no-print-directory format-check
	@$(MAKE) --no-print-directory structure-check
	@$(MAKE) --no-print-directory MODE=release check-unit
	@$(MAKE) --no-print-directory MODE=asan check-unit
	@$(MAKE) --no-print-directory MODE=tsan check-tsan
	@$(MAKE) --no-print-directory MODE=fuzz check-fuzz
	@bash scripts/run-tests.sh --summary

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

# Fails, naming the files, when any C file differs from what `make format` would make of it.
format-check:
	@bad=$$(for f in $$(git ls-files '*.c' '*.h'); do \
	    clang-format --dry-run -Werror "$$f" >/dev/null 2>&1 || echo "$$f"; done); \
	  if [ -n "$$bad" ]; then echo "format-check: run make format; these differ:" $$bad; exit 1; fi; \
	  echo "format-check: every C file as .clang-format has it"

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(HTTP_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(BENCH_OBJ:.o=.d)
