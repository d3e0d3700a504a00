/*
 * test_orch_egress.c: the heal's stats calls (orchestrator/lib/egress.c,
 * egress_stats_summary and egress_stats_ids) against a fake proxy on a
 * unix SOCK_SEQPACKET socket that answers from a script: the summary,
 * ids over pages (the "after" each page sends checked), a boot id that
 * changes between pages, a cursor that does not advance, a proxy older
 * than these forms (every sandbox's counters), and binary-search lookups.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lib/egress.h"
#include "unit.h"

/* One scripted exchange: the "after" the request must carry ("" none)
 * and the reply. */
struct step {
	const char	*after;
	const char	*reply;
};

struct fake {
	int			 lfd;
	const struct step	*steps;
	int			 n, bad;	/* bad: a request not as scripted */
};

static void *
fake_run(void *arg)
{
	struct fake *f = arg;
	char buf[4096];
	const char *a;
	cJSON *req;
	ssize_t k;
	int i, c;

	for (i = 0; i < f->n; i++) {
		if ((c = accept(f->lfd, NULL, NULL)) == -1)
			break;
		if ((k = recv(c, buf, sizeof(buf) - 1, 0)) <= 0) {
			close(c);
			break;
		}
		buf[k] = '\0';
		req = cJSON_Parse(buf);
		a = cJSON_GetStringValue(cJSON_GetObjectItem(req, "after"));
		if (strcmp(a != NULL ? a : "", f->steps[i].after) != 0 ||
		    strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(req, "op")),
		    "stats") != 0)
			f->bad++;
		cJSON_Delete(req);
		(void)send(c, f->steps[i].reply, strlen(f->steps[i].reply), 0);
		close(c);
	}
	return NULL;
}

static char sock[108];

/* Serves steps (n of them) on a fresh socket; *t joins it. */
static int
fake_start(struct fake *f, const struct step *steps, int n, pthread_t *t)
{
	struct sockaddr_un sa;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	unlink(sock);
	f->lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (f->lfd == -1 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(f->lfd, 4) == -1)
		return -1;
	f->steps = steps;
	f->n = n;
	f->bad = 0;
	return pthread_create(t, NULL, fake_run, f);
}

static void
fake_stop(struct fake *f, pthread_t t)
{
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(t, NULL);
	close(f->lfd);
}

TEST(test_summary)
{
	static const struct step s[] = {
		{ "", "{\"ok\":true,\"boot_id\":\"00ff\",\"count\":5000}" },
		{ "", "{\"ok\":true,\"boot_id\":\"NOT-HEX\",\"count\":1}" },
		{ "", "{\"ok\":true,\"boot_id\":\"00ff\"}" },
		{ "", "{\"ok\":false,\"error\":\"unknown op\"}" },
	};
	struct egress_admin a = { .unix_path = sock };
	struct egress_ids ids;
	struct fake f;
	pthread_t t;
	char err[256];

	CHECK(fake_start(&f, s, 4, &t) == 0);
	CHECK(egress_stats_summary(&a, &ids, err, sizeof(err)) == 0);
	CHECK_STR(ids.boot_id, "00ff");
	CHECK_INT(ids.count, 5000);
	CHECK_INT(ids.n, 0);
	/* a boot id that is not hex is not kept (the heal then walks) */
	CHECK(egress_stats_summary(&a, &ids, err, sizeof(err)) == 0);
	CHECK_STR(ids.boot_id, "");
	CHECK(egress_stats_summary(&a, &ids, err, sizeof(err)) == -1);
	CHECK(strstr(err, "no count") != NULL);
	CHECK(egress_stats_summary(&a, &ids, err, sizeof(err)) == -1);
	CHECK(strstr(err, "unknown op") != NULL);
	fake_stop(&f, t);
	CHECK_INT(f.bad, 0);
}

TEST(test_ids_pages)
{
	static const struct step s[] = {
		{ "", "{\"ok\":true,\"boot_id\":\"ab\",\"count\":5,"
		    "\"ids\":[\"s-b\",\"s-d\"],\"next\":\"s-d\"}" },
		{ "s-d", "{\"ok\":true,\"boot_id\":\"ab\",\"count\":5,"
		    "\"ids\":[\"s-e\",\"s-a\"],\"next\":\"s-e\"}" },
		{ "s-e", "{\"ok\":true,\"boot_id\":\"ab\",\"count\":5,"
		    "\"ids\":[\"s-f\"]}" },
	};
	struct egress_admin a = { .unix_path = sock };
	struct egress_ids ids;
	struct fake f;
	pthread_t t;
	char err[256];

	CHECK(fake_start(&f, s, 3, &t) == 0);
	CHECK(egress_stats_ids(&a, &ids, err, sizeof(err)) == 0);
	fake_stop(&f, t);
	CHECK_INT(f.bad, 0);
	CHECK_STR(ids.boot_id, "ab");
	CHECK_INT(ids.count, 5);
	CHECK_INT(ids.n, 5);
	/* sorted whatever the order sent, then found by binary search */
	CHECK_STR(ids.v[0], "s-a");
	CHECK_STR(ids.v[4], "s-f");
	CHECK(egress_ids_has(&ids, "s-a"));
	CHECK(egress_ids_has(&ids, "s-e"));
	CHECK(egress_ids_has(&ids, "s-f"));
	CHECK(!egress_ids_has(&ids, "s-c"));
	CHECK(!egress_ids_has(&ids, ""));
	egress_ids_free(&ids);
	CHECK_INT(ids.n, 0);
	CHECK(!egress_ids_has(&ids, "s-a"));
}

TEST(test_ids_refused)
{
	/* the proxy restarted between pages */
	static const struct step restarted[] = {
		{ "", "{\"ok\":true,\"boot_id\":\"ab\",\"count\":2,"
		    "\"ids\":[\"s-a\"],\"next\":\"s-a\"}" },
		{ "s-a", "{\"ok\":true,\"boot_id\":\"cd\",\"count\":0,\"ids\":[]}" },
	};
	/* a cursor that goes back would loop for ever */
	static const struct step stuck[] = {
		{ "", "{\"ok\":true,\"boot_id\":\"ab\",\"count\":3,"
		    "\"ids\":[\"s-b\"],\"next\":\"s-b\"}" },
		{ "s-b", "{\"ok\":true,\"boot_id\":\"ab\",\"count\":3,"
		    "\"ids\":[\"s-a\"],\"next\":\"s-a\"}" },
	};
	struct egress_admin a = { .unix_path = sock };
	struct egress_ids ids;
	struct fake f;
	pthread_t t;
	char err[256];

	CHECK(fake_start(&f, restarted, 2, &t) == 0);
	CHECK(egress_stats_ids(&a, &ids, err, sizeof(err)) == -1);
	CHECK(strstr(err, "restarted") != NULL);
	egress_ids_free(&ids);
	fake_stop(&f, t);
	CHECK(fake_start(&f, stuck, 2, &t) == 0);
	CHECK(egress_stats_ids(&a, &ids, err, sizeof(err)) == -1);
	CHECK(strstr(err, "did not advance") != NULL);
	egress_ids_free(&ids);
	fake_stop(&f, t);
}

TEST(test_older_proxy)
{
	/* a proxy without these forms sends every sandbox's counters */
	static const char old[] = "{\"ok\":true,\"boot_id\":\"ab\",\"sandboxes\":"
	    "[{\"id\":\"s-b\",\"conns\":0},{\"id\":\"s-a\",\"conns\":1}]}";
	static const struct step s[] = { { "", old }, { "", old } };
	struct egress_admin a = { .unix_path = sock };
	struct egress_ids ids;
	struct fake f;
	pthread_t t;
	char err[256];

	CHECK(fake_start(&f, s, 2, &t) == 0);
	CHECK(egress_stats_summary(&a, &ids, err, sizeof(err)) == 0);
	CHECK_INT(ids.count, 2);
	CHECK(egress_stats_ids(&a, &ids, err, sizeof(err)) == 0);
	CHECK_INT(ids.n, 2);
	CHECK(egress_ids_has(&ids, "s-a") && egress_ids_has(&ids, "s-b"));
	egress_ids_free(&ids);
	fake_stop(&f, t);
}

int
main(void)
{
	snprintf(sock, sizeof(sock), "/tmp/test_orch_egress.%d.sock", (int)getpid());
	RUN(test_summary);
	RUN(test_ids_pages);
	RUN(test_ids_refused);
	RUN(test_older_proxy);
	unlink(sock);
	return unit_done();
}
