#!/usr/bin/env bash
# r34-sandboxctl-conf.sh: sandboxctl -c reads the orchestrator's own config
# file (issue 34): its local: section and homes.dir, the other sections
# ignored; an unknown key under local: is still an error naming the file's
# line. The older form (a file of the local: section alone) still works.
# A real orchestrator runs on the same file and sandboxctl lists its warm
# sandbox. Local runtime only (root, bwrap).
. "$(dirname "$0")/../lib/common.sh"
if [ "$(id -u)" != 0 ] || ! command -v bwrap >/dev/null 2>&1; then
	skip "sandboxctl-conf" "needs root and bubblewrap (the local runtime)"
	exit 0
fi
ORCH_TEST_RUNTIME=local
. "$TOP/tests/mcp/orch-lib.sh"

# The orchestrator's config as the e2e tests write it, with sections of
# every kind besides local: scalars, block and flow mappings, a list, a
# homes: section with keys that are not sandboxctl's, and UTF-8 text.
orch_config "pool:" "  min_idle: 1" \
	"http: {max_body: 1MiB, timeout: 5m}" \
	"allowed_origins: [\"http://ex.example\"]" \
	"sandbox:" "  memory: 256MiB" \
	"homes:" "  size: 64MiB" "  dir: $ORCH_STATE/homes" "  ttl: 0" \
	"apps:" "  domain: \"apps.localhost\"  # é, ü: UTF-8 in an ignored section"
CONF=$T/orch.yaml
check "the file is the orchestrator's own (orchestrator -n accepts it)" \
	"$ORCH_BIN" -n -f "$CONF"

check "sandboxctl -c ORCH.yaml list" "$SBX" -c "$CONF" list
check "sandboxctl -f ORCH.yaml list --json" bash -c \
	"'$SBX' -f '$CONF' list --json | python3 -c 'import json,sys; assert json.load(sys.stdin) == []'"
check "the older form (local: alone) still works" "$SBX" -c "$T/rt.yaml" list

# The full file's local: section is the one read: a sandbox made through it
# is in the state directory the local-only file names, and back.
check "create through the orchestrator's file" "$SBX" -c "$CONF" create r34-a
check "listed through the local-only file" bash -c "'$SBX' -c '$T/rt.yaml' list | grep -q r34-a"
check "exec through the orchestrator's file" bash -c \
	"[ \"\$('$SBX' -c '$CONF' exec r34-a -- 'echo hi')\" = hi ]"
check "destroy through the orchestrator's file" "$SBX" -c "$CONF" destroy r34-a
check "gone" bash -c "! '$SBX' -c '$T/rt.yaml' list | grep -q r34-a"

# homes.dir is read from the homes: section (a relative one is refused by
# the runtime, naming it); homes.size there is ignored.
sed "s|^  dir: .*|  dir: rel/homes|" "$CONF" >"$T/relhomes.yaml"
"$SBX" -c "$T/relhomes.yaml" list >"$T/out" 2>&1
rc=$?
cat "$T/out"
check "homes.dir read from homes: (relative refused)" test "$rc" = 1
check "... with a message naming homes.dir" grep -q 'homes.dir rel/homes: not an absolute path' "$T/out"

# An unknown key under local: fails, exit 2, naming file, line and key;
# the lines counted are the file's (blanked sections keep their lines).
{
	sed -n '1,/^local:/p' "$CONF"
	echo "  bogus_key: 1"
	sed -n '/^local:/,$p' "$CONF" | tail -n +2
} >"$T/bad.yaml"
line=$(grep -n '^  bogus_key:' "$T/bad.yaml" | cut -d: -f1)
"$SBX" -c "$T/bad.yaml" list >"$T/out" 2>&1
rc=$?
cat "$T/out"
check "unknown key under local: refused (exit 2)" test "$rc" = 2
check "... naming the file's line and the key" grep -qF "$T/bad.yaml:$line: local.bogus_key: unknown key" "$T/out"
check "the orchestrator refuses it too" bash -c "! '$ORCH_BIN' -n -f '$T/bad.yaml' >/dev/null 2>&1"
# the same with a wrong value under local: (cfg's check, not just names)
sed 's|^  mem_bytes: .*|  mem_bytes: lots|' "$CONF" >"$T/badval.yaml"
"$SBX" -c "$T/badval.yaml" list >"$T/out" 2>&1
rc=$?
check "bad value under local: refused (exit 2, key named)" bash -c \
	"[ $rc = 2 ] && grep -q 'local.mem_bytes: expected a size' '$T/out'"

# Flow style at the top, a BOM and UTF-8 before local: in ignored entries.
printf '\xef\xbb\xbf{listen: "\xc3\xa9\xc3\xa9\xc3\xa9", pool: {min_idle: 3},\n local: {state_dir: %s/s, images_dir: %s/images,\n  agent_bin: %s, cgroup_name: %s, uid_base: %s, uid_count: 256}, apps: {port: 1}}\n' \
	"$ORCH_STATE" "$ORCH_STATE" "$AGENT_BIN" "$ORCH_CG" "$((3200000 + ($$ % 10000) * 256))" >"$T/flow.yaml"
check "flow-style file with a BOM and UTF-8" "$SBX" -c "$T/flow.yaml" list
sed 's|uid_count: 256}|uid_count: 256, nope: 1}|' "$T/flow.yaml" >"$T/flowbad.yaml"
line=$(grep -n 'nope:' "$T/flowbad.yaml" | cut -d: -f1)
"$SBX" -c "$T/flowbad.yaml" list >"$T/out" 2>&1
rc=$?
check "flow style: unknown key under local: refused at its line" bash -c \
	"[ $rc = 2 ] && grep -qF '$T/flowbad.yaml:$line: local.nope: unknown key' '$T/out'"
printf 'sandbox: {memory: &m 256MiB}\nlocal:\n  state_dir: /x\n  mem_bytes: *m\n' >"$T/alias.yaml"
"$SBX" -c "$T/alias.yaml" list >"$T/out" 2>&1
rc=$?
cat "$T/out"
check "an alias to an anchor in an ignored section: refused, saying so" bash -c \
	"[ $rc = 2 ] && grep -qF '$T/alias.yaml:4: found undefined alias (sandboxctl reads local: and homes.dir only' '$T/out'"
printf 'listen: x\n---\nlocal: {bogus: 1}\n' >"$T/twodocs.yaml"
check "the first document only, as cfg reads (the second's bad key unread)" \
	bash -c "'$SBX' -c '$T/twodocs.yaml' keys >/dev/null"
printf 'listen: [unclosed\nlocal:\n  state_dir: /x\n' >"$T/syntax.yaml"
"$SBX" -c "$T/syntax.yaml" list >"$T/out" 2>&1
rc=$?
check "a YAML syntax error is still named (exit 2)" bash -c \
	"[ $rc = 2 ] && grep -qF '$T/syntax.yaml:' '$T/out'"
"$SBX" -c "$T/missing.yaml" list >"$T/out" 2>&1
rc=$?
check "a missing file is named (exit 2)" bash -c "[ $rc = 2 ] && grep -qF '$T/missing.yaml' '$T/out'"

# The orchestrator on the same file: its warm sandbox is in sandboxctl's list.
check "orchestrator starts on the file" orch_start
check "its warm sandbox appears to sandboxctl -c ORCH.yaml" wait_for 30 bash -c \
	"'$SBX' -c '$CONF' list --json | python3 -c 'import json,sys; sys.exit(0 if any(s[\"state\"] == \"running\" for s in json.load(sys.stdin)) else 1)'"
orch_stop
