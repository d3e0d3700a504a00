# common/: shared C used by every daemon (not by the static agent unless noted).
COMMON_SRCS := common/b64.c common/hex.c common/digest.c common/log.c common/xmalloc.c common/buf.c common/strnum.c common/cfg.c common/padmin.c common/util.c common/ids.c common/jsonmem.c common/evrelay.c common/h1.c common/backoff.c common/lguard.c common/addrcount.c common/daemon.c
COMMON_OBJS := $(COMMON_SRCS:%.c=$(B)/%.o)
# The subset with no library dependency, safe to link into the static agent.
COMMON_MIN_OBJS := $(B)/common/b64.o $(B)/common/hex.o $(B)/common/log.o $(B)/common/xmalloc.o $(B)/common/buf.o $(B)/common/strnum.o $(B)/common/util.o $(B)/common/ids.o $(B)/common/h1.o $(B)/common/backoff.o
ALL_OBJS += $(COMMON_OBJS)
# The head store on llhttp (h1head.c): linked with $(LLHTTP_OBJS) by the proxy, the gateway,
# the orchestrator and the static agent (agent/module.mk).
H1HEAD_OBJS := $(B)/common/h1head.o
ALL_OBJS += $(H1HEAD_OBJS)
UNIT_TESTS += $(B)/tests/unit/test_h1head
ALL_OBJS += $(B)/tests/unit/test_h1head.o
$(B)/tests/unit/test_h1head: $(B)/tests/unit/test_h1head.o $(H1HEAD_OBJS) $(COMMON_MIN_OBJS) $(LLHTTP_OBJS)
	$(CC) $(LDFLAGS) $^ -o $@

# hex.c and digest.c (SHA-256, HMAC-SHA256 on libcrypto): published vectors.
UNIT_TESTS += $(B)/tests/unit/test_digest
ALL_OBJS += $(B)/tests/unit/test_digest.o
$(B)/tests/unit/test_digest: $(B)/tests/unit/test_digest.o $(B)/common/hex.o $(B)/common/digest.o
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@

UNIT_TESTS += $(B)/tests/unit/test_common $(B)/tests/unit/test_cfg $(B)/tests/unit/test_h1 $(B)/tests/unit/test_addrcount \
	$(B)/tests/unit/test_backoff
$(B)/tests/unit/test_backoff: $(B)/tests/unit/test_backoff.o $(B)/common/backoff.o
	$(CC) $(LDFLAGS) $^ -o $@
ALL_OBJS += $(B)/tests/unit/test_backoff.o
$(B)/tests/unit/test_h1: $(B)/tests/unit/test_h1.o $(COMMON_MIN_OBJS)
	$(CC) $(LDFLAGS) $^ -o $@
ALL_OBJS += $(B)/tests/unit/test_h1.o
$(B)/tests/unit/test_addrcount: $(B)/tests/unit/test_addrcount.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ALL_OBJS += $(B)/tests/unit/test_addrcount.o
$(B)/tests/unit/test_common: $(B)/tests/unit/test_common.o $(COMMON_MIN_OBJS)
	$(CC) $(LDFLAGS) $^ -o $@
$(B)/tests/unit/test_cfg: $(B)/tests/unit/test_cfg.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ALL_OBJS += $(B)/tests/unit/test_common.o $(B)/tests/unit/test_cfg.o

# Fuzzing the YAML loader: libFuzzer build (make fuzz) and gcc replay build.
BINS += $(B)/tests/fuzz/replay_cfg
ALL_OBJS += $(B)/tests/fuzz/fuzz_cfg.o $(B)/tests/fuzz/replay_main.o
$(B)/tests/fuzz/replay_cfg: $(B)/tests/fuzz/fuzz_cfg.o $(B)/tests/fuzz/replay_main.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_cfg
$(B)/tests/fuzz/fuzz_cfg: $(B)/tests/fuzz/fuzz_cfg.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ $(PKG_LIBS) -o $@
$(COMMON_OBJS) $(B)/tests/fuzz/fuzz_cfg.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif

# Fuzzing the shared HTTP/1 head rules (h1.c) and the head store (h1head.c)
# with llhttp's plain read of a head beside them.
BINS += $(B)/tests/fuzz/replay_h1
ALL_OBJS += $(B)/tests/fuzz/fuzz_h1.o
$(B)/tests/fuzz/replay_h1: $(B)/tests/fuzz/fuzz_h1.o $(B)/tests/fuzz/replay_main.o $(H1HEAD_OBJS) $(COMMON_MIN_OBJS) $(LLHTTP_OBJS)
	$(CC) $(LDFLAGS) $^ -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_h1
$(B)/tests/fuzz/fuzz_h1: $(B)/tests/fuzz/fuzz_h1.o $(H1HEAD_OBJS) $(COMMON_MIN_OBJS) $(LLHTTP_OBJS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ -o $@
$(B)/tests/fuzz/fuzz_h1.o $(H1HEAD_OBJS): CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif
