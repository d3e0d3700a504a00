# gateway/: the app gateway (docs/gateway.md): browsers to apps in sandboxes.
# The parts with no I/O (unit tests and the fuzz target link these).
GW_LIB_SRCS := gateway/conf.c gateway/auth.c gateway/head.c gateway/req.c gateway/page.c gateway/gw.c
GW_SRCS := $(GW_LIB_SRCS) gateway/upool.c gateway/ctl.c gateway/conn.c gateway/main.c
GW_LIB_OBJS := $(GW_LIB_SRCS:%.c=$(B)/%.o)
GW_OBJS := $(GW_SRCS:%.c=$(B)/%.o)
ALL_OBJS += $(GW_OBJS)

BINS += $(B)/gateway/app-gateway
$(B)/gateway/app-gateway: $(GW_OBJS) $(COMMON_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@

GW_UNITS := auth
UNIT_TESTS += $(GW_UNITS:%=$(B)/tests/unit/test_gw_%)
ALL_OBJS += $(GW_UNITS:%=$(B)/tests/unit/test_gw_%.o)
$(B)/tests/unit/test_gw_%: $(B)/tests/unit/test_gw_%.o $(GW_LIB_OBJS) $(COMMON_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ALL_OBJS +=

# Fuzzing the request-head path: libFuzzer build (make fuzz) and gcc replay build.
BINS += $(B)/tests/fuzz/replay_gw_http
ALL_OBJS += $(B)/tests/fuzz/fuzz_gw_http.o
$(B)/tests/fuzz/replay_gw_http: $(B)/tests/fuzz/fuzz_gw_http.o $(B)/tests/fuzz/replay_main.o $(GW_LIB_OBJS) $(COMMON_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_gw_http
$(B)/tests/fuzz/fuzz_gw_http: $(B)/tests/fuzz/fuzz_gw_http.o $(GW_LIB_OBJS) $(COMMON_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ $(PKG_LIBS) -o $@
$(GW_LIB_OBJS) $(H1HEAD_OBJS) $(B)/tests/fuzz/fuzz_gw_http.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif
