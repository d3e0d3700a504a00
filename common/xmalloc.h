/* xmalloc.h: allocation that aborts on failure and checks overflow. */
#ifndef XMALLOC_H
#define XMALLOC_H

#include <stddef.h>
#include "attrib.h"

void	*xmalloc(size_t) MALLOC;
void	*xcalloc(size_t, size_t) MALLOC;
void	*xreallocarray(void *, size_t, size_t);
char	*xstrdup(const char *) MALLOC;
char	*xstrndup(const char *, size_t) MALLOC;
int	 xasprintf(char **, const char *, ...) PRINTF(2, 3);

#endif
