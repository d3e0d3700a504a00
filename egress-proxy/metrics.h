/*
 * metrics.h: the proxy's counters as Prometheus text (metrics.c), for the
 * admin "metrics" op and GET /metrics (docs/proxy.md "Metrics"). It only
 * reads: the counters are the_proxy.st (proxy.h), the addon error count
 * (addon.h), the sandbox registry and the leaf cache.
 */
#ifndef PROXY_METRICS_H
#define PROXY_METRICS_H

struct buf;

/* Appends the exposition text to b (a line that does not fit under b->max is left out). */
void	metrics_text(struct buf *b);

#endif
