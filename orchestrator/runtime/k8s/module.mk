# orchestrator/runtime/k8s/module.mk: the kubernetes runtime (k8s.c, its proxy
# fleet fleet.c, homes home.c, pod start start.c and API helpers api.c; k8s_int.h), its REST client, object builders and the NetworkPolicy renderer (netpol/), plus
# the k8sctl driver and unit tests. Included by orchestrator/module.mk.
# Whoever links $(RT_K8S_OBJS) also links $(RT_COMMON_OBJS) $(RT_SEAM_OBJS)
# $(H1HEAD_OBJS) $(LLHTTP_OBJS) $(COMMON_OBJS)
# and $(PKG_LIBS) (libcurl, cJSON, libyaml, OpenSSL).
RT_K8S_OBJS := $(B)/orchestrator/runtime/k8s/k8s.o $(B)/orchestrator/runtime/k8s/fleet.o \
    $(B)/orchestrator/runtime/k8s/home.o $(B)/orchestrator/runtime/k8s/start.o \
    $(B)/orchestrator/runtime/k8s/api.o $(B)/orchestrator/runtime/k8s/cache.o \
    $(B)/orchestrator/runtime/k8s/client.o \
    $(B)/orchestrator/runtime/k8s/obj.o $(B)/netpol/netpol.o
K8S_CPPFLAGS := -Iorchestrator -Inetpol
ALL_OBJS += $(RT_K8S_OBJS) $(B)/orchestrator/runtime/k8s/k8sctl.o \
    $(B)/tests/unit/test_k8s_obj.o $(B)/tests/unit/test_k8s_client.o \
    $(B)/tests/unit/test_k8s_home.o

$(RT_K8S_OBJS) $(B)/orchestrator/runtime/k8s/k8sctl.o $(B)/tests/unit/test_k8s_obj.o \
    $(B)/tests/unit/test_k8s_client.o $(B)/tests/unit/test_k8s_home.o: CPPFLAGS += $(K8S_CPPFLAGS)

BINS += $(B)/orchestrator/k8sctl
$(B)/orchestrator/k8sctl: $(B)/orchestrator/runtime/k8s/k8sctl.o $(RT_K8S_OBJS) \
    $(RT_COMMON_OBJS) $(RT_SEAM_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@

UNIT_TESTS += $(B)/tests/unit/test_k8s_obj $(B)/tests/unit/test_k8s_client \
    $(B)/tests/unit/test_k8s_home
$(B)/tests/unit/test_k8s_home: $(B)/tests/unit/test_k8s_home.o \
    $(B)/orchestrator/runtime/k8s/obj.o $(RT_COMMON_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
$(B)/tests/unit/test_k8s_obj: $(B)/tests/unit/test_k8s_obj.o \
    $(B)/orchestrator/runtime/k8s/obj.o $(B)/netpol/netpol.o $(RT_COMMON_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
$(B)/tests/unit/test_k8s_client: $(B)/tests/unit/test_k8s_client.o \
    $(B)/orchestrator/runtime/k8s/client.o $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@

# The init container's copy helper (images/agent): static, libc only.
BINS += $(B)/images/agent/agent-install
$(B)/images/agent/agent-install: images/agent/agent-install.c
	@mkdir -p $(@D)
	$(CC) $(filter-out $(SAN),$(CFLAGS)) -static $< -o $@

# Fuzzing the parsers: libFuzzer build (make fuzz) and the gcc replay that
# tests/run feeds tests/fuzz/corpus/k8s_parse/ to.
K8S_FUZZ_DEPS := $(B)/orchestrator/runtime/k8s/client.o $(B)/orchestrator/runtime/k8s/obj.o \
    $(RT_COMMON_OBJS) $(COMMON_OBJS)
BINS += $(B)/tests/fuzz/replay_k8s_parse
ALL_OBJS += $(B)/tests/fuzz/fuzz_k8s_parse.o
$(B)/tests/fuzz/fuzz_k8s_parse.o: CPPFLAGS += $(K8S_CPPFLAGS)
$(B)/tests/fuzz/replay_k8s_parse: $(B)/tests/fuzz/fuzz_k8s_parse.o \
    $(B)/tests/fuzz/replay_main.o $(K8S_FUZZ_DEPS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(B)/tests/fuzz/fuzz_k8s_parse
$(B)/tests/fuzz/fuzz_k8s_parse: $(B)/tests/fuzz/fuzz_k8s_parse.o $(K8S_FUZZ_DEPS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ $(PKG_LIBS) -o $@
$(B)/tests/fuzz/fuzz_k8s_parse.o $(B)/orchestrator/runtime/k8s/client.o \
    $(B)/orchestrator/runtime/k8s/obj.o: CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif
