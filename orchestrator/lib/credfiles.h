/*
 * credfiles.h: the client configuration files a sandbox gets for its named
 * credentials (issue 30; docs/addons.md, "Client files"), built from the
 * proxy's register reply: ~/.npmrc, ~/.config/pip/pip.conf,
 * ~/.m2/settings.xml, ~/.docker/config.json, ~/.aws/credentials,
 * ~/.aws/config, ~/.cargo/config.toml and ~/.cargo/credentials.toml, each
 * holding placeholders, never a value.
 *
 * Rules:
 * - the reply is read as hostile input: a credential whose placeholder,
 *   URL, user, id, profile or name is not of the shape the proxy's declaration
 *   check allows is left out (and logged), so nothing in it can break a
 *   file's syntax; what goes in is escaped for the file all the same
 *   (percent-encoding in a URL's user, XML entities, JSON);
 * - a file is whole: it is written over any file of that name (the
 *   sandbox's own content there is not merged), rewritten at every attach;
 * - paths are relative to the sandbox user's home; the caller writes them
 *   (mode 0600, the sandbox user's).
 * No I/O: unit-tested (tests/unit/test_credfiles.c).
 */
#ifndef CREDFILES_H
#define CREDFILES_H

#include <stddef.h>
#include <cjson/cJSON.h>

#define CREDFILES_MAX	(64 * 1024)	/* all files' text: 128 credentials fit */

/* Whether s is a placeholder's shape: "PXC" and 29 of A-Z 2-7. */
int	credfiles_placeholder_ok(const cJSON *s);

/*
 * The files for the register reply's "credentials" object creds, logged
 * as sandbox id when something is left out: a JSON object {"relative
 * path": "content"} (caller frees with cJSON_Delete), or NULL when no
 * credential names a client.
 */
cJSON	*credfiles_build(const char *id, const cJSON *creds);

/*
 * The files credential c (one member of the register reply's
 * "credentials") feeds when credfiles_build takes it (its client and
 * placeholders of the shapes checked there): their paths, as
 * credfiles_build names them, into out[0..max) (static strings). The
 * count: 0 when c names no client or would be left out.
 */
size_t	credfiles_paths(const cJSON *c, const char **out, size_t max);

/*
 * Whether path (from credfiles_build's object, as read back) is one of
 * the names credfiles_build makes: the writer takes no other.
 */
int	credfiles_path_ok(const char *path);

#endif
