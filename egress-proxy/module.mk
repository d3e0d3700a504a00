# egress-proxy/: the credential-injecting forward proxy.
PROXY_LIB_SRCS := egress-proxy/config.c egress-proxy/canon.c egress-proxy/netcheck.c \
	egress-proxy/certcache.c egress-proxy/httpreq.c egress-proxy/reqcanon.c egress-proxy/sandbox.c egress-proxy/addon.c egress-proxy/addon_lib.c egress-proxy/pmatch.c egress-proxy/pglob.c egress-proxy/pktline.c egress-proxy/gql.c egress-proxy/qaction.c egress-proxy/bodygate.c \
	egress-proxy/curlev.c egress-proxy/ghapp.c egress-proxy/tls.c egress-proxy/audit.c egress-proxy/tgtab.c egress-proxy/pstate.c egress-proxy/wmsg.c egress-proxy/connaudit.c egress-proxy/unid.c \
	egress-proxy/upool.c egress-proxy/conn.c egress-proxy/tunnel.c egress-proxy/conncred.c egress-proxy/upresp.c egress-proxy/proxy.c egress-proxy/worker.c egress-proxy/metrics.c egress-proxy/admin.c egress-proxy/sigv4.c egress-proxy/cred.c egress-proxy/credreq.c egress-proxy/creddecl.c egress-proxy/credtok.c egress-proxy/regscope.c \
	egress-proxy/secsrc.c egress-proxy/credwatch.c
PROXY_SRCS := $(PROXY_LIB_SRCS) egress-proxy/main.c
PROXY_LIB_OBJS := $(PROXY_LIB_SRCS:%.c=$(B)/%.o)
PROXY_OBJS := $(PROXY_SRCS:%.c=$(B)/%.o)
PROXY_LIBS := $(PKG_LIBS) $(shell pkg-config --libs libidn2 2>/dev/null)
ALL_OBJS += $(PROXY_OBJS)

BINS += $(B)/egress-proxy/egress-proxy
$(B)/egress-proxy/egress-proxy: $(PROXY_OBJS) $(COMMON_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS)
	$(CC) $(LDFLAGS) $^ $(PROXY_LIBS) -o $@

PROXY_UNITS := canon headers certcache lua netcheck hop lograte glob reqcanon qaction sigv4 cred credtok regscope secsrc
UNIT_TESTS += $(PROXY_UNITS:%=$(B)/tests/unit/test_proxy_%)
ALL_OBJS += $(PROXY_UNITS:%=$(B)/tests/unit/test_proxy_%.o)
$(B)/tests/unit/test_proxy_%: $(B)/tests/unit/test_proxy_%.o $(PROXY_LIB_OBJS) $(COMMON_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS)
	$(CC) $(LDFLAGS) $^ $(PROXY_LIBS) -o $@

# Fuzzing: libFuzzer build (make fuzz) and a gcc replay build for tests/run.
BINS += $(B)/tests/fuzz/replay_proxy_request
ALL_OBJS += $(B)/tests/fuzz/fuzz_proxy_request.o
$(B)/tests/fuzz/replay_proxy_request: $(B)/tests/fuzz/fuzz_proxy_request.o $(B)/tests/fuzz/replay_main.o $(PROXY_LIB_OBJS) $(COMMON_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS)
	$(CC) $(LDFLAGS) $^ $(PROXY_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_proxy_request
$(B)/tests/fuzz/fuzz_proxy_request: $(B)/tests/fuzz/fuzz_proxy_request.o $(PROXY_LIB_OBJS) $(COMMON_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ $(PROXY_LIBS) -o $@
endif
ifeq ($(FUZZ),1)
$(PROXY_LIB_OBJS) $(COMMON_OBJS) $(H1HEAD_OBJS) $(B)/tests/fuzz/fuzz_proxy_request.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif

# The pattern matcher against the real string library (differential).
BINS += $(B)/tests/fuzz/replay_proxy_pattern
ALL_OBJS += $(B)/tests/fuzz/fuzz_proxy_pattern.o
$(B)/tests/fuzz/replay_proxy_pattern: $(B)/tests/fuzz/fuzz_proxy_pattern.o $(B)/tests/fuzz/replay_main.o $(B)/egress-proxy/pmatch.o
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_proxy_pattern
$(B)/tests/fuzz/fuzz_proxy_pattern: $(B)/tests/fuzz/fuzz_proxy_pattern.o $(B)/egress-proxy/pmatch.o
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ $(PKG_LIBS) -o $@
$(B)/tests/fuzz/fuzz_proxy_pattern.o $(B)/egress-proxy/pmatch.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif

# The pkt-line reader (push rules): unit test and fuzz target.
UNIT_TESTS += $(B)/tests/unit/test_pktline
ALL_OBJS += $(B)/tests/unit/test_pktline.o
$(B)/tests/unit/test_pktline: $(B)/tests/unit/test_pktline.o $(B)/egress-proxy/pktline.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
BINS += $(B)/tests/fuzz/replay_pktline
ALL_OBJS += $(B)/tests/fuzz/fuzz_pktline.o
$(B)/tests/fuzz/replay_pktline: $(B)/tests/fuzz/fuzz_pktline.o $(B)/tests/fuzz/replay_main.o $(B)/egress-proxy/pktline.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_pktline
$(B)/tests/fuzz/fuzz_pktline: $(B)/tests/fuzz/fuzz_pktline.o $(B)/egress-proxy/pktline.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ $(PKG_LIBS) -o $@
$(B)/tests/fuzz/fuzz_pktline.o $(B)/egress-proxy/pktline.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif

# Canonical request targets (reqcanon.c): fuzz target (the unit test is test_proxy_reqcanon).
BINS += $(B)/tests/fuzz/replay_proxy_reqcanon
ALL_OBJS += $(B)/tests/fuzz/fuzz_proxy_reqcanon.o
$(B)/tests/fuzz/replay_proxy_reqcanon: $(B)/tests/fuzz/fuzz_proxy_reqcanon.o $(B)/tests/fuzz/replay_main.o $(B)/egress-proxy/reqcanon.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_proxy_reqcanon
$(B)/tests/fuzz/fuzz_proxy_reqcanon: $(B)/tests/fuzz/fuzz_proxy_reqcanon.o $(B)/egress-proxy/reqcanon.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ $(PKG_LIBS) -o $@
$(B)/tests/fuzz/fuzz_proxy_reqcanon.o $(B)/egress-proxy/reqcanon.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif

# The GraphQL request judge (body gate): unit test and fuzz target.
UNIT_TESTS += $(B)/tests/unit/test_gql
ALL_OBJS += $(B)/tests/unit/test_gql.o
$(B)/tests/unit/test_gql: $(B)/tests/unit/test_gql.o $(B)/egress-proxy/gql.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
BINS += $(B)/tests/fuzz/replay_gql
ALL_OBJS += $(B)/tests/fuzz/fuzz_gql.o
$(B)/tests/fuzz/replay_gql: $(B)/tests/fuzz/fuzz_gql.o $(B)/tests/fuzz/replay_main.o $(B)/egress-proxy/gql.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_gql
$(B)/tests/fuzz/fuzz_gql: $(B)/tests/fuzz/fuzz_gql.o $(B)/egress-proxy/gql.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ $(PKG_LIBS) -o $@
# The judge itself instrumented too (address, undefined), not only the fuzzer's link.
$(B)/tests/fuzz/fuzz_gql.o $(B)/egress-proxy/gql.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif

# GitLab quick actions (qaction.c) through their gate: fuzz target (the unit test is test_proxy_qaction).
BINS += $(B)/tests/fuzz/replay_proxy_qaction
ALL_OBJS += $(B)/tests/fuzz/fuzz_proxy_qaction.o
QACTION_OBJS := $(B)/egress-proxy/qaction.o $(B)/egress-proxy/bodygate.o $(B)/egress-proxy/gql.o $(B)/egress-proxy/pktline.o $(B)/egress-proxy/pglob.o
$(B)/tests/fuzz/replay_proxy_qaction: $(B)/tests/fuzz/fuzz_proxy_qaction.o $(B)/tests/fuzz/replay_main.o $(QACTION_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_proxy_qaction
$(B)/tests/fuzz/fuzz_proxy_qaction: $(B)/tests/fuzz/fuzz_proxy_qaction.o $(QACTION_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ $(PKG_LIBS) -o $@
$(B)/tests/fuzz/fuzz_proxy_qaction.o $(B)/egress-proxy/qaction.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif

# AWS Signature Version 4 (sigv4.c): fuzz target (the unit test is test_proxy_sigv4).
BINS += $(B)/tests/fuzz/replay_proxy_sigv4
ALL_OBJS += $(B)/tests/fuzz/fuzz_proxy_sigv4.o
$(B)/tests/fuzz/replay_proxy_sigv4: $(B)/tests/fuzz/fuzz_proxy_sigv4.o $(B)/tests/fuzz/replay_main.o $(B)/egress-proxy/sigv4.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_proxy_sigv4
$(B)/tests/fuzz/fuzz_proxy_sigv4: $(B)/tests/fuzz/fuzz_proxy_sigv4.o $(B)/egress-proxy/sigv4.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ $(PKG_LIBS) -o $@
$(B)/tests/fuzz/fuzz_proxy_sigv4.o $(B)/egress-proxy/sigv4.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif

# The scope a registry request needs (regscope.c): fuzz target (the unit
# test is test_proxy_regscope).
BINS += $(B)/tests/fuzz/replay_proxy_regscope
ALL_OBJS += $(B)/tests/fuzz/fuzz_proxy_regscope.o
$(B)/tests/fuzz/replay_proxy_regscope: $(B)/tests/fuzz/fuzz_proxy_regscope.o $(B)/tests/fuzz/replay_main.o $(B)/egress-proxy/regscope.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_proxy_regscope
$(B)/tests/fuzz/fuzz_proxy_regscope: $(B)/tests/fuzz/fuzz_proxy_regscope.o $(B)/egress-proxy/regscope.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ $(PKG_LIBS) -o $@
$(B)/tests/fuzz/fuzz_proxy_regscope.o $(B)/egress-proxy/regscope.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif
