/*
 * netpol.c: the per-sandbox NetworkPolicy renderer (see netpol.h). The
 * output is what netpol/sandbox-policy.example.json shows; a test keeps
 * the two in step and runs both through the OpenAPI validator.
 */
#include <stdlib.h>
#include <string.h>

#include "netpol.h"

static cJSON *
kv_obj(const struct netpol_kv *kv, size_t n)
{
	cJSON *o = cJSON_CreateObject();
	size_t i;

	for (i = 0; i < n; i++)
		cJSON_AddStringToObject(o, kv[i].k, kv[i].v);
	return o;
}

static cJSON *
selector(const struct netpol_kv *kv, size_t n)
{
	cJSON *s = cJSON_CreateObject();

	cJSON_AddItemToObject(s, "matchLabels", kv_obj(kv, n));
	return s;
}

/* A peer: pods with these labels in namespace ns. */
static cJSON *
peer(const char *ns, const struct netpol_kv *kv, size_t n)
{
	cJSON *p = cJSON_CreateObject(), *nsl;
	struct netpol_kv nk = { "kubernetes.io/metadata.name", ns };

	cJSON_AddItemToObject(p, "podSelector", selector(kv, n));
	if (ns != NULL) {
		nsl = selector(&nk, 1);
		cJSON_AddItemToObject(p, "namespaceSelector", nsl);
	}
	return p;
}

static cJSON *
port(const char *proto, int num)
{
	cJSON *p = cJSON_CreateObject();

	cJSON_AddStringToObject(p, "protocol", proto);
	cJSON_AddNumberToObject(p, "port", num);
	return p;
}

static int
port_ok(int p)
{
	return p >= 1 && p <= 65535;
}

/* {dir: [who], "ports": [{proto, portnum}(, {proto2, portnum})]} */
static cJSON *
rule_to(const char *dir, cJSON *who, const char *proto, int portnum,
    const char *proto2)
{
	cJSON *rule = cJSON_CreateObject(), *arr;

	cJSON_AddItemToArray(cJSON_AddArrayToObject(rule, dir), who);
	arr = cJSON_AddArrayToObject(rule, "ports");
	cJSON_AddItemToArray(arr, port(proto, portnum));
	if (proto2 != NULL)
		cJSON_AddItemToArray(arr, port(proto2, portnum));
	return rule;
}

cJSON *
netpol_render_sandbox(const struct netpol_sandbox *s)
{
	static const struct netpol_kv kube_dns = { "k8s-app", "kube-dns" };
	cJSON *np, *meta, *spec, *types, *eg, *in, *rule, *arr;
	size_t i;

	if (s->name == NULL || s->ns == NULL || s->npod == 0 ||
	    s->norch == 0 || !port_ok(s->agent_port) ||
	    (s->nproxy > 0 && !port_ok(s->proxy_port)) ||
	    (s->napp_ports > 0 && (s->gw == NULL || s->ngw == 0 ||
	    s->app_ports == NULL)))
		return NULL;
	for (i = 0; i < s->napp_ports; i++)
		if (!port_ok(s->app_ports[i]))
			return NULL;
	np = cJSON_CreateObject();
	cJSON_AddStringToObject(np, "apiVersion", "networking.k8s.io/v1");
	cJSON_AddStringToObject(np, "kind", "NetworkPolicy");
	meta = cJSON_AddObjectToObject(np, "metadata");
	cJSON_AddStringToObject(meta, "name", s->name);
	cJSON_AddStringToObject(meta, "namespace", s->ns);
	if (s->nlabels > 0)
		cJSON_AddItemToObject(meta, "labels", kv_obj(s->labels, s->nlabels));
	if (s->nannotations > 0)
		cJSON_AddItemToObject(meta, "annotations", kv_obj(s->annotations,
		    s->nannotations));
	spec = cJSON_AddObjectToObject(np, "spec");
	cJSON_AddItemToObject(spec, "podSelector", selector(s->pod, s->npod));
	types = cJSON_AddArrayToObject(spec, "policyTypes");
	cJSON_AddItemToArray(types, cJSON_CreateString("Ingress"));
	cJSON_AddItemToArray(types, cJSON_CreateString("Egress"));

	/* Ingress: the orchestrator to the agent port, nothing else but the
	 * exposed apps below. */
	in = cJSON_AddArrayToObject(spec, "ingress");
	cJSON_AddItemToArray(in, rule_to("from", peer(s->orch_ns ? s->orch_ns :
	    s->ns, s->orch, s->norch), "TCP", s->agent_port, NULL));
	/* The app gateway to the exposed ports, one rule; none: no rule. */
	if (s->napp_ports > 0) {
		rule = cJSON_CreateObject();
		cJSON_AddItemToArray(cJSON_AddArrayToObject(rule, "from"),
		    peer(s->gw_ns ? s->gw_ns : s->ns, s->gw, s->ngw));
		arr = cJSON_AddArrayToObject(rule, "ports");
		for (i = 0; i < s->napp_ports; i++)
			cJSON_AddItemToArray(arr, port("TCP", s->app_ports[i]));
		cJSON_AddItemToArray(in, rule);
	}

	/* Egress: the assigned proxy pod's port; an empty list denies all. */
	eg = cJSON_AddArrayToObject(spec, "egress");
	if (s->proxy != NULL && s->nproxy > 0)
		cJSON_AddItemToArray(eg, rule_to("to", peer(s->proxy_ns ?
		    s->proxy_ns : s->ns, s->proxy, s->nproxy), "TCP",
		    s->proxy_port, NULL));
	if (s->dns)
		cJSON_AddItemToArray(eg, rule_to("to", peer(s->dns_ns ? s->dns_ns :
		    "kube-system", s->ndns_pod ? s->dns_pod : &kube_dns,
		    s->ndns_pod ? s->ndns_pod : 1), "UDP", 53, "TCP"));
	return np;
}
