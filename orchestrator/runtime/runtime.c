/* runtime.c: helpers shared by every runtime engine. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

void
rt_info_clear(struct rt_info *ri)
{
	size_t i;

	for (i = 0; i < ri->nlabels; i++) {
		free((char *)ri->labels[i].k);
		free((char *)ri->labels[i].v);
	}
	free(ri->labels);
	ri->labels = NULL;
	ri->nlabels = 0;
}

void
rt_info_free_array(struct rt_info *a, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		rt_info_clear(&a[i]);
	free(a);
}

const char *
rt_state_name(enum rt_state s)
{
	switch (s) {
	case RT_CREATING: return "creating";
	case RT_RUNNING: return "running";
	case RT_STOPPED: return "stopped";
	case RT_FAILED: return "failed";
	}
	return "unknown";
}

const char *
rt_label(const struct rt_info *ri, const char *k)
{
	size_t i;

	for (i = 0; i < ri->nlabels; i++)
		if (strcmp(ri->labels[i].k, k) == 0)
			return ri->labels[i].v;
	return NULL;
}

