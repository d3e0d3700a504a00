#!/usr/bin/env bash
# r34-openapi.sh: docs/openapi.json (issue 34) cannot drift from the code.
# The document must be a valid OpenAPI 3.1 document (a standard validator
# from npm), and a scripted session against a real orchestrator on the
# local runtime (tests/openapi/live.mjs) goes through every operation and
# the error statuses it can reach, checking each request it sends and each
# response it gets against the document (status listed for the operation,
# headers, bodies, every NDJSON line of exec), that GET /openapi.json
# serves the same bytes, and that the checker refuses spoilt responses.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

if [ ! -d "$TOP/tests/openapi/node_modules/ajv" ] ||
	[ ! -d "$TOP/tests/openapi/node_modules/@seriousme/openapi-schema-validator" ]; then
	bash "$TOP/scripts/deps-npm.sh" >/dev/null 2>&1
fi
DOC=$TOP/docs/openapi.json
check "the document is a valid OpenAPI 3.1 document" \
    bash -c "cd '$TOP/tests/openapi' && node live.mjs '$DOC'"
# The fake runtime's agent runs on the host: files and exec there would
# write into the host's /workspace (as in 59-orch-files-exec.sh).
if [ "$ORCH_RT" != local ]; then skip "the live session needs the local runtime (root, bwrap)"; exit 0; fi

# Small limits, so that 413, 429 and 507 are reachable; apps on for expose.
orch_config "files:" "  max_bytes: 2MiB" "exec:" "  max_concurrent: 1" \
    "http:" "  max_body: 64KiB" "apps:" "  domain: apps.localhost" \
    "  control_socket: $T/gw.sock" "  max_per_sandbox: 1" "homes:" "  size: 16MiB" \
    "  keep_mounted: 1s"
check "orch starts" orch_start
(cd "$TOP/tests/openapi" && timeout 300 node live.mjs "$DOC" "$ORCH_URL" "$ORCH_KEY") > "$T/live.out" 2>&1
rc=$?
cat "$T/live.out"
check "the live session matches the document (live.mjs)" test "$rc" = 0
check "it ran to its end" grep -q '^ok   negative: a create request' "$T/live.out"
check "daemon still up" kill -0 "$ORCH_PID"
