/* jsonmem.c: cJSON allocates through xmalloc (see jsonmem.h). */
#include <stdlib.h>
#include <cjson/cJSON.h>

#include "jsonmem.h"
#include "xmalloc.h"

static void *
jsonmem_alloc(size_t n)
{
	return xmalloc(n);
}

void
jsonmem_init(void)
{
	cJSON_Hooks h = { .malloc_fn = jsonmem_alloc, .free_fn = free };

	cJSON_InitHooks(&h);
}
