# orchestrator/runtime/local/module.mk: the local runtime (bubblewrap), the agent client
# and the sandboxctl operator tool. Included by orchestrator/module.mk.
# Whoever links $(RT_LOCAL_OBJS) also links $(RT_SEAM_OBJS) $(H1HEAD_OBJS)
# $(LLHTTP_OBJS) $(COMMON_OBJS) $(PKG_LIBS) (cJSON) and defines HAVE_RT_LOCAL.
RT_LOCAL_SRCS := $(addprefix orchestrator/runtime/local/,local.c home.c health.c spawn.c proc.c admit.c record.c files.c image.c netns.c seccomp.c cgroup.c start.c idle.c)
RT_LOCAL_OBJS += $(RT_LOCAL_SRCS:%.c=$(B)/%.o)
ALL_OBJS += $(RT_LOCAL_OBJS) $(B)/orchestrator/runtime/local/sandboxctl.o \
	$(B)/tests/unit/test_agentc.o $(B)/tests/unit/test_runtime_local.o \
	$(B)/tests/unit/test_rl_admit.o

BINS += $(B)/orchestrator/sandboxctl
$(B)/orchestrator/sandboxctl: $(B)/orchestrator/runtime/local/sandboxctl.o $(RT_LOCAL_OBJS) \
    $(RT_COMMON_OBJS) $(RT_SEAM_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@

UNIT_TESTS += $(B)/tests/unit/test_agentc $(B)/tests/unit/test_runtime_local \
	$(B)/tests/unit/test_rl_admit
$(B)/tests/unit/test_agentc: $(B)/tests/unit/test_agentc.o $(RT_SEAM_OBJS) \
    $(RT_COMMON_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
$(B)/tests/unit/test_runtime_local: $(B)/tests/unit/test_runtime_local.o \
    $(RT_LOCAL_OBJS) $(RT_COMMON_OBJS) $(RT_SEAM_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
$(B)/tests/unit/test_rl_admit: $(B)/tests/unit/test_rl_admit.o \
    $(RT_LOCAL_OBJS) $(RT_COMMON_OBJS) $(RT_SEAM_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS) $(COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
$(RT_LOCAL_OBJS) $(B)/orchestrator/runtime/local/sandboxctl.o \
    $(B)/tests/unit/test_agentc.o $(B)/tests/unit/test_runtime_local.o \
    $(B)/tests/unit/test_rl_admit.o: CPPFLAGS += -Iorchestrator
