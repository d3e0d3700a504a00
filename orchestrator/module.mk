# orchestrator/: the control plane and its runtimes. Each part keeps its
# own fragment so that parts can be built and owned separately:
#   core.mk   orchestrator daemon (MCP, REST, sessions, pool, reaper)
#   runtime/local/module.mk  local runtime (bubblewrap) + sandboxctl -> RT_LOCAL_OBJS
#   runtime/k8s/module.mk    kubernetes runtime + k8sctl            -> RT_K8S_OBJS
#
# Folders of the orchestrator and their layers, lowest first. A file may
# include the headers of, and call, its own folder and the layers below it;
# folders on one "#layer" line are peers and use neither of each other.
# tests/lib/layers.sh reads these lines (exceptions, each with its reason:
# tests/lib/layers.allow).
#layer common netpol
#layer orchestrator/runtime
#layer orchestrator/lib
#layer orchestrator/runtime/local orchestrator/runtime/k8s orchestrator/runtime/fake
#layer orchestrator/session orchestrator/http
#layer orchestrator/mcp orchestrator/api
#layer orchestrator
#   runtime/   the runtime interface (runtime.h) every runtime implements
#   lib/       what the core and the runtimes share: the agent client
#              (agentc), the proxy admin seam (egress), the credential
#              policy, the work queue, JSON helpers
#   runtime/local, runtime/k8s, runtime/fake: the runtimes
#   session/   the session manager: table, lifecycle, pool, view, options,
#              reconcile, published apps
#   http/      the HTTP server: connections, request heads, streams, listen
#   mcp/       MCP: JSON-RPC, tools, results, live output, schemas, the
#              tools' agent requests (areq)
#   api/       REST: sessions, files and exec transfer (xfer), homes
#   (top)      main.c, conf.c (its conf.h is read by every layer: types),
#              server.c (the route table joining mcp/ and api/), appctl.c
# RT_COMMON_OBJS: the runtime interface. RT_SEAM_OBJS: the clients a
# runtime talks to its sandboxes with (agentc: the agent; egress: the proxy
# admin protocol); whoever links them also links $(H1HEAD_OBJS) (agentc
# reads the agent's replies with it) and $(LLHTTP_OBJS).
RT_COMMON_OBJS := $(B)/orchestrator/runtime/runtime.o
RT_SEAM_OBJS := $(B)/orchestrator/lib/agentc.o $(B)/orchestrator/lib/egress.o \
	$(B)/orchestrator/lib/credfiles.o
ALL_OBJS += $(RT_COMMON_OBJS) $(RT_SEAM_OBJS)
RT_LOCAL_OBJS :=
RT_K8S_OBJS :=
$(RT_COMMON_OBJS) $(RT_SEAM_OBJS): CPPFLAGS += -Iorchestrator
-include orchestrator/runtime/local/module.mk
-include orchestrator/runtime/k8s/module.mk
-include orchestrator/core.mk
