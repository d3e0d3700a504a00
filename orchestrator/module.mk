# orchestrator/: the control plane and its runtimes. Each part keeps its
# own fragment so that parts can be built and owned separately:
#   core.mk   orchestrator daemon (MCP, REST, sessions, pool, reaper)
#   runtime/local/module.mk  local runtime (bubblewrap) + sandboxctl -> RT_LOCAL_OBJS
#   runtime/k8s/module.mk    kubernetes runtime + k8sctl            -> RT_K8S_OBJS
RT_COMMON_OBJS := $(B)/orchestrator/runtime/runtime.o
ALL_OBJS += $(RT_COMMON_OBJS)
RT_LOCAL_OBJS :=
RT_K8S_OBJS :=
$(RT_COMMON_OBJS): CPPFLAGS += -Iorchestrator
-include orchestrator/runtime/local/module.mk
-include orchestrator/runtime/k8s/module.mk
-include orchestrator/core.mk
