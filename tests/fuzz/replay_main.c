/*
 * replay_main.c: links a libFuzzer target (LLVMFuzzerTestOneInput) into a
 * plain program that feeds it every file of a corpus directory, so the
 * corpora are replayed under gcc (and the sanitizers) by `make test`.
 * Prints "ok replay <dir> (<n> inputs)".
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);
int LLVMFuzzerInitialize(int *, char ***) __attribute__((weak));

static int
run_file(const char *path)
{
	FILE *fp;
	struct stat st;
	uint8_t *data, *exact;
	size_t n;

	if ((fp = fopen(path, "rb")) == NULL || fstat(fileno(fp), &st) == -1) {
		if (fp != NULL)
			fclose(fp);
		return -1;
	}
	data = malloc((size_t)st.st_size + 1);
	n = fread(data, 1, (size_t)st.st_size, fp);
	fclose(fp);
	/* the input in exactly its bytes, as libFuzzer gives it: a read one
	 * past the end is then a sanitizer report, not a silent pass */
	exact = malloc(n > 0 ? n : 1);
	memcpy(exact, data, n);
	free(data);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

int
main(int argc, char **argv)
{
	char path[4096];
	struct dirent *de;
	DIR *d;
	int i, count = 0;

	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++) {
		if ((d = opendir(argv[i])) == NULL) {
			if (run_file(argv[i]) == 0)
				count++;
			continue;
		}
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (run_file(path) == 0)
				count++;
		}
		closedir(d);
	}
	printf("%s replay %s (%d inputs)\n", count > 0 ? "ok" : "not ok",
	    argc > 1 ? argv[1] : "(none)", count);
	return count > 0 ? 0 : 1;
}
