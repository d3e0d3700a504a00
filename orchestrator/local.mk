# orchestrator/local.mk: the local runtime (bubblewrap), the agent client
# and the sandboxctl operator tool. Included by orchestrator/module.mk.
# Whoever links $(RT_LOCAL_OBJS) also links $(AGENTC_OBJS) $(LLHTTP_OBJS).
AGENTC_OBJS := $(B)/orchestrator/agentc.o
ALL_OBJS += $(AGENTC_OBJS) $(B)/tests/unit/test_agentc.o

UNIT_TESTS += $(B)/tests/unit/test_agentc
$(B)/tests/unit/test_agentc: $(B)/tests/unit/test_agentc.o $(AGENTC_OBJS) \
    $(RT_COMMON_OBJS) $(LLHTTP_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
$(B)/tests/unit/test_agentc.o: CPPFLAGS += -Iorchestrator
