# Top-level build. Each part has a module.mk fragment that appends to the
# variables below; this file holds only what all parts share.
#
#   make                 build every daemon and tool into build/
#   make test            install deps, build, run unit + e2e tests (tests/run)
#   make test SANITIZER=address,undefined
#   make run             start orchestrator + egress proxy on the local runtime
#   make fuzz            build and run every libFuzzer target (clang-14): up to
#                        FUZZ_EXECS (10M) executions or FUZZ_SECONDS (1800) each
#   make ci              .ci/run: make test, then the ASan+UBSan suite, one summary
#   make bench           run the benchmarks in tests/bench (figures, not a gate)
#   make lint / format   cppcheck + clang-tidy + banned calls / clang-format-14

# `make` alone builds everything (the module.mk fragments define targets first).
.DEFAULT_GOAL := all

CC      ?= cc
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Wshadow \
           -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla \
           -fstack-protector-strong -D_FORTIFY_SOURCE=2 -pthread
CPPFLAGS += -Icommon
LDFLAGS += -pthread
ifeq ($(ERR),1)
CFLAGS  += -Werror
endif

SAN := $(if $(SANITIZER),-fsanitize=$(SANITIZER) -fno-sanitize-recover=all -fno-omit-frame-pointer)
CFLAGS  += $(SAN)
LDFLAGS += $(SAN)

# Sanitizer builds go to their own tree so they never mix with normal objects.
B := build$(if $(SANITIZER),-san)

PKGS := libevent libevent_openssl libevent_pthreads openssl libcurl libcjson lua5.4 yaml-0.1
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

# llhttp: compiled from Debian's node-llhttp C sources, never copied here.
LLHTTP_SRC := /usr/share/llhttp
LLHTTP_INC := /usr/share/include/llhttp
LLHTTP_OBJS := $(B)/llhttp/llhttp.o $(B)/llhttp/api.o $(B)/llhttp/http.o
$(B)/llhttp/%.o: $(LLHTTP_SRC)/%.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fPIC $(SAN) -I$(LLHTTP_INC) -c $< -o $@

# Filled in by the module.mk fragments.
BINS :=
UNIT_TESTS :=
FUZZ_TARGETS :=
ALL_OBJS :=

include common/module.mk
-include egress-proxy/module.mk
-include agent/module.mk
-include orchestrator/module.mk
-include gateway/module.mk

.PHONY: all deps test unit run fuzz ci bench lint format image clean
# Keep intermediate objects (test and fuzz objects come from pattern rules).
.SECONDARY:
all: $(BINS) $(UNIT_TESTS)

# Installs the Debian (and npm) packages the build, tests and run need.
deps:
	@bash scripts/install-deps.sh

# The default sandbox image is built first (cached): the runtime tests use it.
test: deps
	@$(MAKE) --no-print-directory -j$$(nproc) all
	@bash scripts/build-image.sh
	@B=$(B) SANITIZER=$(SANITIZER) bash tests/run $(TESTS)

unit: all
	@B=$(B) bash tests/run --unit-only

run: deps
	@$(MAKE) --no-print-directory all
	@bash scripts/run.sh

bench: deps
	@$(MAKE) --no-print-directory all
	@B=$(B) bash tests/bench/run.sh

# Crashes become seeds in tests/fuzz/corpus/<target>/ (docs/testing.md).
fuzz: deps
	@$(MAKE) --no-print-directory CC=clang-14 B=build-fuzz FUZZ=1 fuzz-targets
	@FUZZ_EXECS=$(FUZZ_EXECS) FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh

FUZZ_EXECS ?= 10000000
FUZZ_SECONDS ?= 1800

# What CI runs: the plain suite, then the sanitizer suite (.ci/run).
ci:
	@bash .ci/run

lint:
	@bash scripts/lint.sh

format:
	@git ls-files '*.c' '*.h' | grep -v '^tests/fuzz/corpus' | xargs clang-format-14 -i

clean:
	rm -rf build build-san build-fuzz

$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) -I$(LLHTTP_INC) -MMD -MP -c $< -o $@

-include $(ALL_OBJS:.o=.d)

# docs/openapi.json built into the orchestrator, which serves it at GET
# /openapi.json (server.c): a C array of its bytes and its ETag (the first
# 16 hex digits of its SHA-256), made with od, sed and sha256sum.
$(B)/gen/openapi_json.h: docs/openapi.json
	@mkdir -p $(@D)
	@{ echo '/* made from docs/openapi.json by the Makefile: do not edit */'; \
	  echo 'static const unsigned char openapi_json[] = {'; \
	  od -An -v -tx1 $< | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '};'; \
	  echo "#define OPENAPI_ETAG \"\\\"$$(sha256sum $< | cut -c1-16)\\\"\""; \
	} > $@.tmp && mv $@.tmp $@
$(B)/orchestrator/server.o: $(B)/gen/openapi_json.h
$(B)/orchestrator/server.o: CPPFLAGS += -I$(B)/gen

# Each part lists its fuzz targets in FUZZ_TARGETS (libFuzzer builds, make fuzz)
# and REPLAY_TESTS (the same target linked with tests/fuzz/replay_main.c under
# gcc; tests/run replays tests/fuzz/corpus/<name>/ through it).
.PHONY: fuzz-targets
fuzz-targets: $(FUZZ_TARGETS)

# Builds the default local sandbox image (Debian, via mmdebstrap); cached.
image: deps
	@bash scripts/build-image.sh
