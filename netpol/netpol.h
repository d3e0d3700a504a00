/*
 * netpol.h: renders the per-sandbox NetworkPolicy (netpol/README.md).
 * Shared by the kubernetes runtime and the k8sctl tool; depends on cJSON
 * only. The policy selects one sandbox pod and:
 *   egress:  only TCP proxy_port on the one assigned proxy pod (none when
 *            no proxy is assigned yet: all egress denied), plus DNS to the
 *            cluster resolver when dns is set (only needed when the proxy
 *            is reached by name; the runtime uses the pod IP);
 *   ingress: only the orchestrator pods, only TCP agent_port; and, when
 *            app ports are given, the app-gateway pods to exactly those
 *            TCP ports (docs/kubernetes.md, "Publishing apps").
 */
#ifndef NETPOL_H
#define NETPOL_H

#include <stddef.h>
#include <cjson/cJSON.h>

struct netpol_kv {
	const char	*k;
	const char	*v;
};

struct netpol_sandbox {
	const char		*name;		/* policy name */
	const char		*ns;		/* sandbox namespace */
	const struct netpol_kv	*labels;	/* of the policy object */
	size_t			 nlabels;
	const struct netpol_kv	*pod;		/* selects the sandbox pod */
	size_t			 npod;
	/* The assigned proxy pod; proxy NULL or nproxy 0: no egress at all. */
	const char		*proxy_ns;
	const struct netpol_kv	*proxy;
	size_t			 nproxy;
	int			 proxy_port;
	/* Who may reach the agent. */
	const char		*orch_ns;
	const struct netpol_kv	*orch;
	size_t			 norch;
	int			 agent_port;
	int			 dns;		/* allow UDP/TCP 53 to kube-dns */
	const char		*dns_ns;	/* default kube-system */
	const struct netpol_kv	*dns_pod;	/* default k8s-app=kube-dns */
	size_t			 ndns_pod;
	/* The exposed apps: who may reach them (the gateway pods in gw_ns)
	 * and on which TCP ports; napp_ports 0: no such rule at all. */
	const char		*gw_ns;		/* default ns */
	const struct netpol_kv	*gw;
	size_t			 ngw;
	const int		*app_ports;
	size_t			 napp_ports;
	const struct netpol_kv	*annotations;	/* of the policy object */
	size_t			 nannotations;
};

/* A new NetworkPolicy object (free with cJSON_Delete); NULL if a required
 * field is missing or a port is out of range (app ports are rendered in
 * the order given: the caller checks them for duplicates). */
cJSON	*netpol_render_sandbox(const struct netpol_sandbox *);

#endif
