# orchestrator/: the control plane and its runtimes. Each part keeps its
# own fragment so that parts can be built and owned separately:
#   core.mk   orchestrator daemon (MCP, REST, sessions, pool, reaper)
#   runtime/local/module.mk  local runtime (bubblewrap) + sandboxctl -> RT_LOCAL_OBJS
#   runtime/k8s/module.mk    kubernetes runtime + k8sctl            -> RT_K8S_OBJS
# RT_COMMON_OBJS: the runtime interface. RT_SEAM_OBJS: the clients a
# runtime talks to its sandboxes with (agentc: the agent; egress: the proxy
# admin protocol); whoever links them also links $(LLHTTP_OBJS).
RT_COMMON_OBJS := $(B)/orchestrator/runtime/runtime.o
RT_SEAM_OBJS := $(B)/orchestrator/agentc.o $(B)/orchestrator/egress.o
ALL_OBJS += $(RT_COMMON_OBJS) $(RT_SEAM_OBJS)
RT_LOCAL_OBJS :=
RT_K8S_OBJS :=
$(RT_COMMON_OBJS) $(RT_SEAM_OBJS): CPPFLAGS += -Iorchestrator
-include orchestrator/runtime/local/module.mk
-include orchestrator/runtime/k8s/module.mk
-include orchestrator/core.mk
