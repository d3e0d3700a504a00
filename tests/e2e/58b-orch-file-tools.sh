#!/usr/bin/env bash
# 58b-orch-file-tools.sh: the MCP file tools (read_file, write_file,
# list_files, delete_file) and live shell output, through the real
# orchestrator on real sandboxes, with the official MCP SDK client
# (tests/mcp/file-tools.mjs): binary round trips checked with sha256 (1 byte
# to the cap), the files.tool_max_bytes cap as tool errors, text reads with
# offsets, non-UTF-8 refused with the base64 hint, paths and symlinks
# confined to the sandbox, listings, version stamps, deletes, a full
# filesystem (507 no_space), and progress notifications carrying a running
# command's output lines.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

if [ ! -d "$TOP/tests/mcp/node_modules/@modelcontextprotocol/sdk" ]; then
	bash "$TOP/scripts/deps-npm.sh" >/dev/null 2>&1
fi
CAP=1048576
orch_config "tools:" "  progress_interval: 1s"
check "orch starts" orch_start

# A host file no sandbox may read, a host directory no write may reach.
HOSTFILE=$T/host-secret-$$
HOSTDIR=$T/host-dir-$$
echo "host secret $$" > "$HOSTFILE"
mkdir -p "$HOSTDIR"
(cd "$TOP/tests/mcp" && timeout 600 node file-tools.mjs "$ORCH_URL/mcp" "$ORCH_KEY" "$CAP" \
	"$HOSTFILE" "$HOSTDIR") | tee "$T/ft.out"
check "the host directory got nothing from the sandbox" test -z "$(ls -A "$HOSTDIR")"
check "the host file is unchanged" grep -qx "host secret $$" "$HOSTFILE"

# A full filesystem (a sandbox with a 32 MiB disk, filled): the agent's
# 507 no_space becomes a clear tool error and the file is left as it was,
# with no temporary file behind.
out=$(mcp_tool full1 create_sandbox '{"disk":"32MiB","fresh_workspace":true}')
if echo "$out" | grep -q 'A new sandbox is ready'; then
	out=$(mcp_tool full1 shell '{"command":"printf old > /workspace/f; dd if=/dev/zero of=/workspace/fill bs=64k 2>/dev/null; df -k /workspace | tail -1"}')
	b64=$(head -c 60000 /dev/urandom | base64 -w0)
	out=$(mcp_tool full1 write_file '{"path":"/workspace/f","encoding":"base64","content":"'"$b64"'"}')
	check "a full filesystem is a tool error saying so (no_space)" contains <(echo "$out") 'ERROR: write_file failed (no_space)'
	check "it says the file is unchanged" contains <(echo "$out") 'the file is unchanged'
	out=$(mcp_tool full1 write_file '{"path":"/workspace/f","append":true,"encoding":"base64","content":"'"$b64"'"}')
	check "an append to a full filesystem too" contains <(echo "$out") 'no_space'
	out=$(mcp_tool full1 shell '{"command":"cat /workspace/f; echo; ls -a /workspace | grep -c agent-"}')
	check "the file keeps its old content, no temporary file left" contains <(echo "$out") $'old\n0'
	out=$(mcp_tool full1 delete_file '{"path":"/workspace/fill"}')
	out=$(mcp_tool full1 write_file '{"path":"/workspace/f","encoding":"base64","content":"'"$b64"'"}')
	check "after freeing space the write works" contains <(echo "$out") 'Replaced /workspace/f: 60000 bytes'
else
	skip "full filesystem" "no disk-limited sandbox here: $out"
fi

# The cap is the operator's: a smaller files.tool_max_bytes is enforced
# (a raw MCP client: the limit is a tool error in a 200 reply).
orch_stop
orch_config "files:" "  tool_max_bytes: 4KiB"
check "orch restarts with a 4 KiB cap" orch_start
out=$(mcp_tool cap1 write_file '{"path":"/workspace/a","content":"'"$(head -c 4097 /dev/zero | tr '\0' x)"'"}')
check "a write over a configured cap is a tool error naming it" contains <(echo "$out") 'ERROR: write_file: 4097 bytes is over this server'"'"'s limit of 4096'
out=$(mcp_tool cap1 write_file '{"path":"/workspace/a","content":"'"$(head -c 4096 /dev/zero | tr '\0' x)"'"}')
check "a write at the cap works" contains <(echo "$out") 'Created /workspace/a: 4096 bytes'
out=$(mcp_tool cap1 read_file '{"path":"/workspace/a","max_bytes":4097}')
check "a read over a configured cap is a tool error" contains <(echo "$out") 'ERROR: read_file: 4097 bytes is over'
out=$(mcp_tool cap1 read_file '{"path":"/workspace/a","offset":4000}')
check "a read from an offset returns the rest" contains <(echo "$out") '96 bytes from offset 4000 of 4096'

check "daemon still up" kill -0 "$ORCH_PID"
check "no orchestrator warnings about results" sh -c "! grep -q 'does not match its outputSchema' '$ORCH_LOG'"
