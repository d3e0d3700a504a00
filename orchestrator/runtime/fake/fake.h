/*
 * runtime/fake/fake.h: a runtime for tests that runs the real agent on the host,
 * one directory per sandbox, WITHOUT isolation. Never use it in production.
 */
#ifndef RUNTIME_FAKE_H
#define RUNTIME_FAKE_H

#include <stddef.h>
#include "runtime/runtime.h"

/* admin: egress proxy admin socket (NULL: none); proxy_addr host:port. */
struct runtime *runtime_fake_new(const char *state_dir, const char *agent,
	    const char *admin, const char *proxy_addr, const char *proxy_ca,
	    long long create_delay_ms, long long list_delay_ms,
	    char *err, size_t errlen);

#endif
