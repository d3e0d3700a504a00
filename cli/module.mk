# cli/: orch, the client CLI of the orchestrator's REST API (docs/cli.md).
# libcurl and cJSON; of common/ only the library-free subset. Needs no root
# and nothing of the host's state: it talks to the API only.
CLI_SRCS := cli/api.c cli/cmds.c cli/exec.c cli/cp.c cli/main.c
CLI_OBJS := $(CLI_SRCS:%.c=$(B)/%.o)
ALL_OBJS += $(CLI_OBJS)
$(CLI_OBJS): CPPFLAGS += -Icli

BINS += $(B)/cli/orch
$(B)/cli/orch: $(CLI_OBJS) $(COMMON_MIN_OBJS)
	$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -o $@
