# agent/: sandbox-agent, the in-sandbox agent (static binary, no libraries
# but llhttp's C sources, compiled in).
AGENT_LIB_SRCS := agent/json.c agent/http.c agent/edit.c agent/fswire.c
AGENT_SRCS := $(AGENT_LIB_SRCS) agent/agent.c agent/ev.c agent/proc.c \
	agent/cgroup.c agent/conn.c agent/nest.c agent/fsview.c agent/fsd.c agent/shell.c agent/shellres.c agent/jobx.c agent/jobwrap.c agent/job.c \
	agent/exec.c agent/fileops.c agent/main.c
AGENT_LIB_OBJS := $(AGENT_LIB_SRCS:%.c=$(B)/%.o)
ALL_OBJS += $(AGENT_SRCS:%.c=$(B)/%.o)

# The common objects the agent links: the library-free subset, and the
# request-head store (h1head.c) with llhttp's C sources, linked statically.
AGENT_COMMON_OBJS := $(COMMON_MIN_OBJS) $(H1HEAD_OBJS) $(LLHTTP_OBJS)

# The static binary is built without the sanitizer (ASan cannot be static);
# under SANITIZER its objects (llhttp's too) go to $(B)/agent-static/ with plain flags.
ifeq ($(SANITIZER),)
AGENT_STATIC_OBJS := $(AGENT_SRCS:%.c=$(B)/%.o) $(AGENT_COMMON_OBJS)
else
AGENT_NOSAN_CFLAGS := $(filter-out $(SAN),$(CFLAGS))
AGENT_STATIC_OBJS := $(patsubst %.c,$(B)/agent-static/%.o,$(AGENT_SRCS) \
	$(COMMON_MIN_OBJS:$(B)/%.o=%.c) $(H1HEAD_OBJS:$(B)/%.o=%.c)) \
	$(LLHTTP_OBJS:$(B)/%=$(B)/agent-static/%)
$(B)/agent-static/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(AGENT_NOSAN_CFLAGS) -Iagent -I$(LLHTTP_INC) -MMD -MP -c $< -o $@
$(B)/agent-static/llhttp/%.o: $(LLHTTP_SRC)/%.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fPIC -I$(LLHTTP_INC) -c $< -o $@
-include $(AGENT_STATIC_OBJS:.o=.d)
BINS += $(B)/agent/sandbox-agent-san
$(B)/agent/sandbox-agent-san: $(AGENT_SRCS:%.c=$(B)/%.o) $(AGENT_COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ -o $@
endif

BINS += $(B)/agent/sandbox-agent
$(B)/agent/sandbox-agent: $(AGENT_STATIC_OBJS)
	@mkdir -p $(@D)
	$(CC) $(filter-out $(SAN),$(LDFLAGS)) -static $^ -o $@

AGENT_UNITS := $(patsubst tests/unit/test_agent_%.c,%,$(wildcard tests/unit/test_agent_*.c))
UNIT_TESTS += $(AGENT_UNITS:%=$(B)/tests/unit/test_agent_%)
ALL_OBJS += $(AGENT_UNITS:%=$(B)/tests/unit/test_agent_%.o)
$(B)/tests/unit/test_agent_%: $(B)/tests/unit/test_agent_%.o $(AGENT_LIB_OBJS) $(AGENT_COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ -o $@
# The process-tree test also needs proc.c, the file service's fsview.c.
$(B)/tests/unit/test_agent_proc: $(B)/agent/proc.o
$(B)/tests/unit/test_agent_fsview: $(B)/agent/fsview.o

# Fuzzing: libFuzzer builds (make fuzz) and gcc replay builds for tests/run.
AGENT_FUZZ := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_agent_*.c))
BINS += $(AGENT_FUZZ:%=$(B)/tests/fuzz/replay_%)
ALL_OBJS += $(AGENT_FUZZ:%=$(B)/tests/fuzz/fuzz_%.o)
$(B)/tests/fuzz/replay_agent_%: $(B)/tests/fuzz/fuzz_agent_%.o $(B)/tests/fuzz/replay_main.o $(AGENT_LIB_OBJS) $(AGENT_COMMON_OBJS)
	$(CC) $(LDFLAGS) $^ -o $@
ifeq ($(FUZZ),1)
FUZZ_TARGETS += $(AGENT_FUZZ:%=$(B)/tests/fuzz/fuzz_%)
$(B)/tests/fuzz/fuzz_agent_%: $(B)/tests/fuzz/fuzz_agent_%.o $(AGENT_LIB_OBJS) $(AGENT_COMMON_OBJS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer,address,undefined $^ -o $@
$(AGENT_LIB_OBJS) $(AGENT_FUZZ:%=$(B)/tests/fuzz/fuzz_%.o): CFLAGS += -fsanitize=fuzzer-no-link,address,undefined
endif
