/*
 * agent-install.c: the init container's only job in a sandbox pod: copy
 * the static agent from the agent image into the shared emptyDir
 * (docs/kubernetes.md). The agent image is FROM scratch, so there is no cp;
 * this is a static binary with no library but libc.
 *
 *   agent-install SRC DST    copies SRC to DST (mode 0555) atomically:
 *                            DST.tmp, fsync, rename.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_BYTES	(256L * 1024 * 1024)

int
main(int argc, char **argv)
{
	char tmp[4096], buf[65536];
	ssize_t n, w, off;
	long total = 0;
	int in, out;

	if (argc != 3) {
		fprintf(stderr, "usage: agent-install SRC DST\n");
		return 2;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]) >= sizeof(tmp)) {
		fprintf(stderr, "agent-install: destination path too long\n");
		return 1;
	}
	if ((in = open(argv[1], O_RDONLY | O_CLOEXEC)) == -1) {
		fprintf(stderr, "agent-install: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	(void)unlink(tmp);
	if ((out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0555)) == -1) {
		fprintf(stderr, "agent-install: %s: %s\n", tmp, strerror(errno));
		return 1;
	}
	for (;;) {
		n = read(in, buf, sizeof(buf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			fprintf(stderr, "agent-install: read: %s\n", strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		if ((total += n) > MAX_BYTES) {
			fprintf(stderr, "agent-install: %s is too large\n", argv[1]);
			goto fail;
		}
		for (off = 0; off < n; off += w) {
			w = write(out, buf + off, (size_t)(n - off));
			if (w == -1 && errno == EINTR) {
				w = 0;
				continue;
			}
			if (w == -1) {
				fprintf(stderr, "agent-install: write: %s\n", strerror(errno));
				goto fail;
			}
		}
	}
	if (fchmod(out, 0555) == -1 || fsync(out) == -1 || close(out) == -1) {
		fprintf(stderr, "agent-install: %s: %s\n", tmp, strerror(errno));
		(void)unlink(tmp);
		return 1;
	}
	close(in);
	if (rename(tmp, argv[2]) == -1) {
		fprintf(stderr, "agent-install: rename to %s: %s\n", argv[2], strerror(errno));
		(void)unlink(tmp);
		return 1;
	}
	printf("agent-install: %s -> %s (%ld bytes)\n", argv[1], argv[2], total);
	return 0;
fail:
	close(out);
	close(in);
	(void)unlink(tmp);
	return 1;
}
