/* ids.c: the id grammars of ids.h. Plain byte tests, no locale. */
#include <string.h>

#include "ids.h"

static int
alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9');
}

int
id_session_valid(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > ID_SESSION_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!alnum((unsigned char)s[i]) && strchr("-_.:@+=", s[i]) == NULL)
			return 0;
	return 1;
}

int
id_sandbox_valid(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n >= ID_SANDBOX_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    (c == '-' && i > 0)))
			return 0;
	}
	return 1;
}

int
id_proxy_valid(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > ID_PROXY_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!alnum((unsigned char)s[i]) && strchr("._:-@", s[i]) == NULL)
			return 0;
	return 1;
}

int
id_traceparent_valid(const char *s)
{
	static const char shape[] = "xx-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-"
	    "xxxxxxxxxxxxxxxx-xx";
	size_t i;

	for (i = 0; shape[i] != '\0'; i++)
		if (shape[i] == '-' ? s[i] != '-' :
		    !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[i] == '\0' && strncmp(s, "ff", 2) != 0 &&
	    strspn(s + 3, "0") < 32 && strspn(s + 36, "0") < 16;
}
