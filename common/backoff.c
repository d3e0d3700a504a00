/*
 * backoff.c: the accept pause and its log rate while descriptors are short
 * (backoff.h). Pure: the caller brings the time and does the pausing.
 */
#include "backoff.h"

long long
backoff_pause(struct backoff *b, long long now)
{
	if (b->pause_ms == 0 || now - b->resumed_at > BACKOFF_STEADY_MS)
		b->pause_ms = BACKOFF_MIN_MS;
	else if ((b->pause_ms *= 2) > BACKOFF_MAX_MS)
		b->pause_ms = BACKOFF_MAX_MS;
	b->npauses++;
	return b->pause_ms;
}

void
backoff_resumed(struct backoff *b, long long now)
{
	b->resumed_at = now;
}

void
backoff_ok(struct backoff *b)
{
	b->pause_ms = 0;
}
