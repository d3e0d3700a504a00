/*
 * pstate.c: the_proxy, the process's one proxy (proxy.h), and its addon
 * source. main.c fills it before the workers start; afterwards only its
 * counters (atomics, any thread) and the addon source change: swapped on
 * the main thread (proxy_set_addons), taken by any (proxy_addons), under
 * src_mtx. The lowest file of the engine (proxy_int.h): it calls none of
 * the others.
 */
#include <pthread.h>
#include <stddef.h>

#include "addon.h"
#include "proxy.h"

struct proxy the_proxy;

long
proxy_open_conns(void)
{
	return atomic_load(&the_proxy.st.conns);
}

struct addon_src *
proxy_addons(void)
{
	struct addon_src *s;

	pthread_mutex_lock(&the_proxy.src_mtx);
	s = the_proxy.src != NULL ? addon_src_ref(the_proxy.src) : NULL;
	pthread_mutex_unlock(&the_proxy.src_mtx);
	return s;
}

void
proxy_set_addons(struct addon_src *s)
{
	struct addon_src *old;

	pthread_mutex_lock(&the_proxy.src_mtx);
	old = the_proxy.src;
	the_proxy.src = s;
	pthread_mutex_unlock(&the_proxy.src_mtx);
	if (old != NULL)
		addon_src_unref(old);
}
