/*
 * jsonmem.h: one out-of-memory policy for cJSON. Every daemon and tool
 * calls jsonmem_init() first thing in main(), so cJSON allocates through
 * xmalloc and a failed allocation aborts as every other one does, instead
 * of returning NULL into code that may not check it.
 */
#ifndef JSONMEM_H
#define JSONMEM_H

void	jsonmem_init(void);

#endif
