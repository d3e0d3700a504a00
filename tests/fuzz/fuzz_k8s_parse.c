/*
 * fuzz_k8s_parse.c: the kubernetes runtime's parsers of peer and file
 * input: kubeconfig (libyaml), API responses read back as pods, Status
 * objects turned into errors, and the session record in annotations.
 * The first byte picks the parser; the rest is the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "runtime/k8s/client.h"
#include "runtime/k8s/obj.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct k8s_kubeconfig kc;
	struct k8s_podview v;
	struct k8s_sbx s;
	struct rt_kv *kv;
	char err[512], *text;
	size_t n, i;
	cJSON *o;

	if (size < 1 || size > 256 * 1024)
		return 0;
	text = malloc(size);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 5) {
	case 0:
		if (k8s_kubeconfig_parse(text, size - 1, "/d", NULL, &kc, err,
		    sizeof(err)) == 0)
			k8s_kubeconfig_clear(&kc);
		break;
	case 1:
		o = cJSON_Parse(text);
		k8s_pod_view(o, &v);
		cJSON_Delete(o);
		break;
	case 2:
		k8s_status_error(400, text, size - 1, err, sizeof(err));
		break;
	case 3:
		if (k8s_sbx_decode(text, "x", &s, err, sizeof(err)) == 0)
			k8s_sbx_clear(&s);
		break;
	case 4:
		if (k8s_labels_decode(text, &kv, &n) == 0) {
			for (i = 0; i < n; i++) {
				free((char *)kv[i].k);
				free((char *)kv[i].v);
			}
			free(kv);
		}
		break;
	}
	free(text);
	return 0;
}
