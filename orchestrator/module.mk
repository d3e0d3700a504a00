# orchestrator/: the control plane and its runtimes. Each part keeps its
# own fragment so that parts can be built and owned separately:
#   core.mk   orchestrator daemon (MCP, REST, sessions, pool, reaper)
#   local.mk  local runtime (bubblewrap) + sandboxctl tool   -> RT_LOCAL_OBJS
#   k8s.mk    kubernetes runtime                            -> RT_K8S_OBJS
RT_COMMON_OBJS := $(B)/orchestrator/runtime.o
ALL_OBJS += $(RT_COMMON_OBJS)
RT_LOCAL_OBJS :=
RT_K8S_OBJS :=
-include orchestrator/local.mk
-include orchestrator/k8s.mk
-include orchestrator/core.mk
