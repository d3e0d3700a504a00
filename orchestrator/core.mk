# orchestrator/core.mk: the orchestrator daemon (MCP, REST, sessions, warm
# pool, reaper, reconcile), its fake runtime for tests, unit tests and the
# JSON-RPC fuzz target. Included by orchestrator/module.mk after the runtimes'
# module.mk, so RT_LOCAL_OBJS / RT_K8S_OBJS are known here; each runtime
# is linked in only when its part exists.
ORCH_SRCS := orchestrator/conf.c orchestrator/lib/work.c orchestrator/session/sessmgr.c \
	orchestrator/session/sessopt.c orchestrator/lib/policy.c orchestrator/session/pool.c orchestrator/session/sess.c orchestrator/session/sessfiles.c orchestrator/session/sessview.c \
	orchestrator/session/reconcile.c orchestrator/session/pressure.c orchestrator/session/apps.c orchestrator/appctl.c \
	orchestrator/mcp/schema.c orchestrator/mcp/tools.c orchestrator/mcp/toollive.c orchestrator/mcp/areq.c orchestrator/mcp/filetools.c orchestrator/mcp/toolres.c orchestrator/mcp/era.c orchestrator/mcp/tasks.c orchestrator/mcp/mcp.c \
	orchestrator/lib/jsonu.c orchestrator/http/http.c orchestrator/http/httpreq.c orchestrator/http/httpstream.c orchestrator/http/httplisten.c \
	orchestrator/mcp/mcp_http.c \
	orchestrator/api/rest.c orchestrator/api/homes.c orchestrator/api/idem.c orchestrator/api/xfer.c orchestrator/server.c orchestrator/runtime/fake/fake.c
ORCH_OBJS := $(ORCH_SRCS:%.c=$(B)/%.o)
ORCH_MAIN := $(B)/orchestrator/main.o
ORCH_DEFS :=
ORCH_RT_OBJS :=
ifneq ($(strip $(RT_LOCAL_OBJS)),)
ORCH_DEFS += -DHAVE_RT_LOCAL
ORCH_RT_OBJS += $(RT_LOCAL_OBJS)
endif
ifneq ($(strip $(RT_K8S_OBJS)),)
ORCH_DEFS += -DHAVE_RT_K8S
ORCH_RT_OBJS += $(RT_K8S_OBJS)
endif
ALL_OBJS += $(ORCH_OBJS) $(ORCH_MAIN)

$(ORCH_OBJS) $(ORCH_MAIN): CPPFLAGS += -Iorchestrator -Inetpol $(ORCH_DEFS)

BINS += $(B)/orchestrator/orchestrator
$(B)/orchestrator/orchestrator: $(ORCH_MAIN) $(ORCH_OBJS) $(ORCH_RT_OBJS) \
    $(RT_COMMON_OBJS) $(RT_SEAM_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $(sort $^) $(PKG_LIBS) -o $@

# Unit tests: link everything but main.o.
ORCH_UNITS := test_orch_mcp test_orch_jsonu test_orch_tools test_orch_results test_orch_egress \
	test_orch_work test_orch_idem
UNIT_TESTS += $(ORCH_UNITS:%=$(B)/tests/unit/%)
ALL_OBJS += $(ORCH_UNITS:%=$(B)/tests/unit/%.o)
$(ORCH_UNITS:%=$(B)/tests/unit/%.o): CPPFLAGS += -Iorchestrator -Inetpol $(ORCH_DEFS)
$(B)/tests/unit/test_orch_%: $(B)/tests/unit/test_orch_%.o $(ORCH_OBJS) \
    $(ORCH_RT_OBJS) $(RT_COMMON_OBJS) $(RT_SEAM_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $(sort $^) $(PKG_LIBS) -o $@
# test_orch_results includes tools.c (its static table and output schemas;
# the builders are toolres.o's): no tools.o.
$(B)/tests/unit/test_orch_results: $(B)/tests/unit/test_orch_results.o \
    $(filter-out $(B)/orchestrator/mcp/tools.o,$(ORCH_OBJS)) $(ORCH_RT_OBJS) \
    $(RT_COMMON_OBJS) $(RT_SEAM_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $(sort $^) $(PKG_LIBS) -o $@

# Fuzz: JSON-RPC dispatch (libFuzzer under `make fuzz`; replay under gcc).
ORCH_FUZZ_DEPS := $(ORCH_OBJS) $(ORCH_RT_OBJS) $(RT_COMMON_OBJS) $(RT_SEAM_OBJS) \
	$(H1HEAD_OBJS) $(LLHTTP_OBJS) $(COMMON_OBJS)
ALL_OBJS += $(B)/tests/fuzz/fuzz_orch_jsonrpc.o
$(B)/tests/fuzz/fuzz_orch_jsonrpc.o: CPPFLAGS += -Iorchestrator -Inetpol $(ORCH_DEFS)
BINS += $(B)/tests/fuzz/replay_orch_jsonrpc
$(B)/tests/fuzz/replay_orch_jsonrpc: $(B)/tests/fuzz/fuzz_orch_jsonrpc.o \
    $(B)/tests/fuzz/replay_main.o $(ORCH_FUZZ_DEPS)
	$(CC) $(LDFLAGS) $(sort $^) $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_orch_jsonrpc
$(B)/tests/fuzz/fuzz_orch_jsonrpc: $(B)/tests/fuzz/fuzz_orch_jsonrpc.o $(ORCH_FUZZ_DEPS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $(sort $^) $(PKG_LIBS) -o $@
endif
# Fuzz: the HTTP server (fuzz_orch_http.c includes http.c: no http.o).
ORCH_HTTP_FUZZ_DEPS := $(filter-out $(B)/orchestrator/http/http.o,$(ORCH_FUZZ_DEPS))
ALL_OBJS += $(B)/tests/fuzz/fuzz_orch_http.o
$(B)/tests/fuzz/fuzz_orch_http.o: CPPFLAGS += -Iorchestrator -Inetpol $(ORCH_DEFS)
BINS += $(B)/tests/fuzz/replay_orch_http
$(B)/tests/fuzz/replay_orch_http: $(B)/tests/fuzz/fuzz_orch_http.o \
    $(B)/tests/fuzz/replay_main.o $(ORCH_HTTP_FUZZ_DEPS)
	$(CC) $(LDFLAGS) $(sort $^) $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_orch_http
$(B)/tests/fuzz/fuzz_orch_http: $(B)/tests/fuzz/fuzz_orch_http.o $(ORCH_HTTP_FUZZ_DEPS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $(sort $^) $(PKG_LIBS) -o $@
endif
ifeq ($(FUZZ),1)
$(ORCH_OBJS) $(B)/tests/fuzz/fuzz_orch_jsonrpc.o $(B)/tests/fuzz/fuzz_orch_http.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif
# The credential policy (policy.c) and the proxy register op that carries
# it (egress.c, with the runtime seam it sits in).
UNIT_TESTS += $(B)/tests/unit/test_policy
ALL_OBJS += $(B)/tests/unit/test_policy.o
$(B)/tests/unit/test_policy.o: CPPFLAGS += -Iorchestrator
$(B)/tests/unit/test_policy: $(B)/tests/unit/test_policy.o \
    $(B)/orchestrator/lib/policy.o $(B)/orchestrator/lib/jsonu.o $(RT_COMMON_OBJS) \
    $(RT_SEAM_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $(sort $^) $(PKG_LIBS) -o $@
# The client files of named credentials (credfiles.c, issue 30).
UNIT_TESTS += $(B)/tests/unit/test_credfiles
ALL_OBJS += $(B)/tests/unit/test_credfiles.o
$(B)/tests/unit/test_credfiles.o: CPPFLAGS += -Iorchestrator
$(B)/tests/unit/test_credfiles: $(B)/tests/unit/test_credfiles.o \
    $(B)/orchestrator/lib/credfiles.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $(sort $^) $(PKG_LIBS) -o $@
# Fuzz: the credential policy (parse, canonical round trip, narrowing).
ALL_OBJS += $(B)/tests/fuzz/fuzz_policy.o
$(B)/tests/fuzz/fuzz_policy.o: CPPFLAGS += -Iorchestrator
BINS += $(B)/tests/fuzz/replay_policy
$(B)/tests/fuzz/replay_policy: $(B)/tests/fuzz/fuzz_policy.o \
    $(B)/tests/fuzz/replay_main.o $(B)/orchestrator/lib/policy.o \
    $(B)/orchestrator/lib/jsonu.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $(sort $^) $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_policy
$(B)/tests/fuzz/fuzz_policy: $(B)/tests/fuzz/fuzz_policy.o \
    $(B)/orchestrator/lib/policy.o $(B)/orchestrator/lib/jsonu.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $(sort $^) $(PKG_LIBS) -o $@
$(B)/tests/fuzz/fuzz_policy.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif
