#!/usr/bin/env bash
# r34-cli.sh: orch, the REST API's client CLI (cli/, docs/cli.md), against
# a real orchestrator on the local runtime: its settings (env, config file,
# flags), every command with its exit status and --json shape; exec (100 MiB
# of stdout beside stderr, both whole and apart, 124 on timeout, stdin from
# a pipe, a stream whose agent dies: 123); cp of a 200 MiB file and of a tree
# with symlinks both ways (bytes and modes equal, links kept as links, never
# followed out of the sandbox), a download broken off and resumed, an upload
# broken off and run again; the progress bar on a terminal only; hostile
# input (paths with "..", a server answering garbage, closing mid-stream,
# listing paths out of the tree or with a NUL: a clear error, nothing
# written half).
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"
if [ "$ORCH_RT" != local ]; then skip "the CLI's file tests need the local runtime (root, bwrap): the fake one has no confinement"; exit 0; fi
O=${ORCH_CLI:-$BIN/cli/orch}	# ORCH_CLI: another build of it (a sanitizer one)
[ -x "$O" ] || { fail "cli built" "$O is missing"; exit 1; }

orch_config "files:" "  max_bytes: 300MiB" "exec:" "  max_output: 256MiB" \
    "apps:" "  domain: apps.localhost" "  port: 8081" "  control_socket: $T/gw.sock" \
    "homes:" "  size: 32MiB" "  keep_mounted: 1s"
check "orch starts" orch_start
# nothing of the caller's own settings: a private HOME, the variables set
export HOME=$T/home ORCH_URL ORCH_KEY
unset ORCH_CONFIG ORCH_KEY_FILE XDG_CONFIG_HOME
mkdir -p "$HOME"
sha() { sha256sum "$1" | cut -d' ' -f1; }
# rc CMD...: runs CMD with stdin from /dev/null; its exit status in $RC,
# stdout in $T/out, stderr in $T/err
rc() { "$@" </dev/null >"$T/out" 2>"$T/err"; RC=$?; }
oneline() { [ "$(wc -l <"$T/err")" = 1 ]; }
jqo() { jq -e "$1" "$T/out" >/dev/null; }

# --- settings ---
rc env -u ORCH_URL "$O" list
check "no URL: exit 2, says how to set it" eval '[ $RC = 2 ] && grep -q ORCH_URL "$T/err"'
mkdir -p "$HOME/.config/orch"
printf '# the CLI config\nurl = %s\nkey_file = %s\n' "$ORCH_URL" "$T/key" >"$HOME/.config/orch/config"
rc env -u ORCH_URL -u ORCH_KEY "$O" --json list
check "config file (url, key_file): list works" eval '[ $RC = 0 ] && jqo ".sessions | type == \"array\""'
printf 'url = %s\nkey = %s\n' "$ORCH_URL" "$ORCH_KEY" >"$T/keycfg"
chmod 644 "$T/keycfg"
rc env -u ORCH_URL -u ORCH_KEY "$O" --config "$T/keycfg" list
check "a config file holding the key, readable by others: works, with a warning" \
    eval '[ $RC = 0 ] && grep -q "others may read it" "$T/err"'
rc env ORCH_URL=http://127.0.0.1:1 "$O" --url "$ORCH_URL" list
check "--url overrides ORCH_URL" test $RC = 0
printf 'bogus = 1\n' >"$T/badcfg"
rc "$O" --config "$T/badcfg" list
check "a bad config line: exit 2, names the line" eval '[ $RC = 2 ] && grep -q "badcfg:1: unknown key bogus" "$T/err"'
rc env ORCH_KEY=k-wrong-wrong-wrong "$O" --json list
check "a wrong key: exit 1, the API's message, --json error" eval '[ $RC = 1 ] && oneline && jqo ".error.code == \"unauthorized\""'
rc "$O" frobnicate
check "unknown command: exit 2" test $RC = 2
rc "$O" show
check "missing argument: exit 2 with the usage" eval '[ $RC = 2 ] && grep -q "usage: orch show ID" "$T/err"'
rc "$O" --help
check "--help lists the commands" eval '[ $RC = 0 ] && grep -q "^  exec " "$T/out"'

# nothing of it needs root: an unprivileged user lists, copies, runs
if command -v setpriv >/dev/null; then
	mkdir -m 0777 "$T/nobody"
	printf 'n\n' >"$T/nobody/in"
	asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$T/nobody" "$@" </dev/null; }
	"$O" create c0 </dev/null >/dev/null
	check "an unprivileged user: list, cp both ways, exec" eval 'asnobody "$O" --json list >/dev/null &&
	    asnobody "$O" cp "$T/nobody/in" c0:/workspace/in && asnobody "$O" cp c0:/workspace/in "$T/nobody/back" &&
	    [ "$(cat "$T/nobody/back")" = n ] && [ "$(asnobody "$O" exec c0 "cat /workspace/in")" = n ]'
	"$O" delete c0 </dev/null >/dev/null
else
	skip "an unprivileged user" "no setpriv"
fi

# --- sessions ---
rc "$O" --json create c1
check "create: 0, the session JSON" eval '[ $RC = 0 ] && jqo ".id == \"c1\" and .state == \"running\" and (.sandbox_id | type == \"string\")"'
rc "$O" create c1
check "create again (human): 0" eval '[ $RC = 0 ] && grep -q "^c1: running" "$T/out"'
rc "$O" --json list
check "list --json: {sessions:[...]} with c1" eval '[ $RC = 0 ] && jqo "[.sessions[].id] | index(\"c1\")"'
rc "$O" list --state running
check "list (human): a table with c1" eval '[ $RC = 0 ] && grep -q "^ID " "$T/out" && grep -q "^c1 " "$T/out"'
rc "$O" --json show c1
check "show --json: the session with limits" eval '[ $RC = 0 ] && jqo ".id == \"c1\" and (.limits | type == \"object\")"'
rc "$O" --json stop c1
check "stop: stopped" eval '[ $RC = 0 ] && jqo ".state == \"stopped\""'
rc "$O" --json start c1
check "start: running" eval '[ $RC = 0 ] && jqo ".state == \"running\""'
rc "$O" show nope
check "show an unknown session: exit 1, one line, the API's message" \
    eval '[ $RC = 1 ] && oneline && grep -q "no session .nope. (not_found, HTTP 404)" "$T/err"'
rc "$O" --json delete nope
check "delete unknown --json: {error:{code:not_found}}" eval '[ $RC = 1 ] && jqo ".error.code == \"not_found\""'
rc "$O" create bad/id
check "a bad session id: exit 1, the API's message" eval '[ $RC = 1 ] && oneline && grep -q "bad_request" "$T/err"'
rc "$O" create c9 --set memory='"64MiB"' --set bogus=1
check "create with an unknown option: exit 1 naming it" eval '[ $RC = 1 ] && grep -q bogus "$T/err"'

# --- exec ---
rc "$O" exec c1 'printf out; printf err >&2; exit 3'
check "exec: stdout and stderr apart, the exit status" \
    eval '[ $RC = 3 ] && [ "$(cat "$T/out")" = out ] && [ "$(cat "$T/err")" = err ]'
rc "$O" exec c1 -- echo 'a b' "it's"
check "exec with several words: each quoted" eval '[ $RC = 0 ] && [ "$(cat "$T/out")" = "a b it'"'"'s" ]'
rc "$O" exec -e X=1 -e Y='two words' -w /tmp c1 'echo "$X $Y $(pwd)"'
check "exec -e and -w" eval '[ "$(cat "$T/out")" = "1 two words /tmp" ]'
t0=$(date +%s%N)
"$O" exec c1 '(yes 0123456789abcdef | head -c 104857600) & seq 1 200000 >&2; wait' \
    </dev/null >"$T/x.out" 2>"$T/x.err"
RC=$?
t1=$(date +%s%N)
echo "exec of 100 MiB stdout + 1.2 MB stderr: $(( (t1 - t0) / 1000000 )) ms (load $(cut -d' ' -f1 /proc/loadavg))"
check "exec 100 MiB: exit 0" test $RC = 0
check "exec 100 MiB: stdout whole" test "$(sha "$T/x.out")" = "$(yes 0123456789abcdef | head -c 104857600 | sha256sum | cut -d' ' -f1)"
check "exec 100 MiB: stderr whole and apart" test "$(sha "$T/x.err")" = "$(seq 1 200000 | sha256sum | cut -d' ' -f1)"
rm -f "$T/x.out" "$T/x.err"
"$O" exec -n c1 'yes' 2>"$T/err" | head -c 100000 >/dev/null
RC=${PIPESTATUS[0]}
check "exec into a reader that goes (| head): 141, quietly" eval '[ $RC = 141 ] && [ ! -s "$T/err" ]'
t0=$(date +%s)
rc "$O" exec -t 1 c1 'sleep 30'
check "exec timeout: 124, within seconds" eval '[ $RC = 124 ] && [ $(( $(date +%s) - t0 )) -lt 10 ]'
head -c 1048576 /dev/urandom >"$T/in1m"
out=$("$O" exec c1 'sha256sum | cut -d" " -f1' <"$T/in1m")
check "exec: stdin from a file, bytes exact" test "$out" = "$(sha "$T/in1m")"
out=$(printf 'l1\nl2\0x' | "$O" exec c1 'wc -c')
check "exec: stdin from a pipe" test "$(echo $out)" = 7
out=$(printf 'abc' | "$O" exec -n c1 'wc -c')
check "exec -n: no stdin" test "$(echo $out)" = 0
head -c 6000000 /dev/zero | "$O" exec c1 'wc -c' >"$T/out" 2>"$T/err"
RC=$?
check "exec: stdin over http.max_body: 125, the message names it" \
    eval '[ $RC = 125 ] && oneline && grep -q http.max_body "$T/err"'
rc "$O" --json exec c1 'echo hi; exit 5'
check "exec --json: the NDJSON lines, the last the exit line" \
    eval '[ $RC = 5 ] && [ "$(head -1 "$T/out" | jq -r .b | base64 -d)" = hi ] && [ "$(tail -1 "$T/out" | jq .exit)" = 5 ]'
rc "$O" exec nope true
check "exec in an unknown session: 125, the API's message" eval '[ $RC = 125 ] && oneline && grep -q not_found "$T/err"'
# an agent killed mid-command: the stream's last line is agent_lost -> 123
"$O" create c3 >/dev/null </dev/null
id3=$("$O" --json show c3 </dev/null | jq -r .sandbox_id)
apid=$(pgrep -P "$(awk '{print $3}' "$ORCH_SBX_DIR/$id3/pid")" | head -n1)
( "$O" exec c3 'echo started; sleep 60' </dev/null >"$T/lost.out" 2>"$T/lost.err"; echo $? >"$T/lost.rc" ) &
lp=$!
for _ in $(seq 1 100); do grep -q started "$T/lost.out" 2>/dev/null && break; sleep 0.1; done
[ -n "$apid" ] && kill -9 "$apid"
wait $lp
check "exec whose agent dies: 123, output so far, a clear message" \
    eval '[ "$(cat "$T/lost.rc")" = 123 ] && [ "$(cat "$T/lost.out")" = started ] && grep -q "agent was lost" "$T/lost.err"'

# --- cp: a 200 MiB file both ways ---
head -c 209715200 /dev/urandom >"$T/big"
chmod 0640 "$T/big"
t0=$(date +%s%N)
rc "$O" --json cp "$T/big" c1:/workspace/
t1=$(date +%s%N)
check "cp up 200 MiB: 0, --json counts" eval '[ $RC = 0 ] && jqo ".files == 1 and .bytes == 209715200 and .resumed_bytes == 0"'
check "cp up 200 MiB: the sandbox has the bytes and the mode" \
    test "$("$O" exec c1 'sha256sum /workspace/big | cut -d" " -f1; stat -c %a /workspace/big' </dev/null | tr '\n' ' ')" = "$(sha "$T/big") 640 "
mkdir "$T/dl"
t2=$(date +%s%N)
rc "$O" cp c1:/workspace/big "$T/dl/"
t3=$(date +%s%N)
echo "cp 200 MiB up $(( (t1 - t0) / 1000000 )) ms, down $(( (t3 - t2) / 1000000 )) ms (load $(cut -d' ' -f1 /proc/loadavg))"
check "cp down 200 MiB: 0, bytes and mode equal" \
    eval '[ $RC = 0 ] && [ "$(sha "$T/dl/big")" = "$(sha "$T/big")" ] && [ "$(stat -c %a "$T/dl/big")" = 640 ]'
check "cp down: no progress bar off a terminal" test ! -s "$T/err"
# broken off (-l slows it; killed once 8 MiB are in), then resumed
rm -f "$T/dl/big"
"$O" cp -l 20MiB c1:/workspace/big "$T/dl/big" </dev/null 2>/dev/null &
cpp=$!
part_size() { stat -c %s "$T"/dl/.big.orch-*.part 2>/dev/null || echo 0; }
wait_until 30 eval '[ "$(part_size)" -gt 8388608 ]'
kill -9 $cpp; wait $cpp 2>/dev/null
check "cp down broken off: no target, a part kept" \
    eval '[ ! -e "$T/dl/big" ] && ls -a "$T/dl" | grep -q "^\.big\.orch-.*\.part$"'
rc "$O" --json cp c1:/workspace/big "$T/dl/big"
check "cp down again: resumed, bytes equal, no part left" \
    eval '[ $RC = 0 ] && jqo ".resumed_bytes > 0 and .resumed_bytes + .bytes == 209715200" &&
        [ "$(sha "$T/dl/big")" = "$(sha "$T/big")" ] && [ "$(ls -a "$T/dl" | grep -c orch-)" = 0 ]'
# an upload broken off leaves the old file; a re-run replaces it whole
head -c 104857600 /dev/urandom >"$T/big2"
timeout 2 "$O" cp -l 20MiB "$T/big2" c1:/workspace/big </dev/null 2>/dev/null
check "cp up broken off: the old file untouched" \
    test "$("$O" exec c1 'sha256sum /workspace/big | cut -d" " -f1' </dev/null)" = "$(sha "$T/big")"
rc "$O" cp "$T/big2" c1:/workspace/big
check "cp up again: replaced whole" \
    eval '[ $RC = 0 ] && [ "$("$O" exec c1 "sha256sum /workspace/big | cut -d\" \" -f1" </dev/null)" = "$(sha "$T/big2")" ]'
rm -f "$T/big" "$T/big2" "$T/dl/big"
# the progress bar on a terminal (script(1) gives the CLI one)
if command -v script >/dev/null; then
	head -c 20971520 /dev/urandom >"$T/f20"
	script -qec "$O cp $T/f20 c1:/workspace/f20" /dev/null >"$T/tty.out" 2>&1
	check "progress bar on a terminal" grep -q '100%.*MiB/s' "$T/tty.out"
else
	skip "progress bar on a terminal" "no script(1)"
fi

# --- cp: a tree with symlinks both ways ---
mk_tree() {
	mkdir -p "$1/sub/deep" "$1/empty" "$1/ro"
	printf 'a\n' >"$1/a"; chmod 0751 "$1/a"
	head -c 300000 /dev/urandom >"$1/sub/deep/b"; chmod 0600 "$1/sub/deep/b"
	: >"$1/zero"
	printf 'x' >"$1/ro/f"; chmod 0444 "$1/ro/f"; chmod 0555 "$1/ro"
	chmod 0700 "$1/sub"; chmod 0750 "$1/empty"
	ln -s ../a "$1/sub/rel"
	ln -s /etc "$1/etc"		# out of the tree: kept as a link
	ln -s sub "$1/dirlink"
	ln -s nowhere "$1/dangling"
}
# name, mode, type, link target, size, sha of files
tree_sig() {
	(cd "$1" && find . -mindepth 1 -printf '%p %m %y %l %s\n' | sort &&
	    find . -type f -exec sha256sum {} + | sort -k2)
}
mk_tree "$T/tree"
rc "$O" --json cp "$T/tree" c1:/workspace/
check "cp a tree up: 0, --json counts" eval '[ $RC = 0 ] && jqo ".files == 4 and .links == 4 and .dirs == 5"'
out=$("$O" exec c1 'cd /workspace/tree && find . -mindepth 1 | sort | while read -r p; do
    printf "%s %s %s %s\n" "$p" "$(stat -c %a "$p")" "$(stat -c %F "$p" | cut -c1-3)" "$(readlink "$p")"; done' </dev/null)
want=$(cd "$T/tree" && find . -mindepth 1 | sort | while read -r p; do
    printf "%s %s %s %s\n" "$p" "$(stat -c %a "$p")" "$(stat -c %F "$p" | cut -c1-3)" "$(readlink "$p")"; done)
check "cp a tree up: names, modes, types, link targets equal" test "$out" = "$want"
check "cp a tree up: bytes equal" test "$("$O" exec c1 'sha256sum /workspace/tree/sub/deep/b | cut -d" " -f1' </dev/null)" = "$(sha "$T/tree/sub/deep/b")"
check "cp a tree up: the link out is a link in the sandbox, nothing of the host's /etc copied" \
    test "$("$O" exec c1 'test -L /workspace/tree/etc && echo link' </dev/null)" = link
mkdir "$T/back"
rc "$O" --json cp c1:/workspace/tree "$T/back/"
check "cp a tree down: 0, --json counts" eval '[ $RC = 0 ] && jqo ".files == 4 and .links == 4 and .dirs == 5"'
check "cp a tree down: bytes, modes, links equal" test "$(tree_sig "$T/back/tree")" = "$(tree_sig "$T/tree")"
echo stale >"$T/back/tree/sub/deep/.b.orch-00000000000000ff.part"
rc "$O" cp c1:/workspace/tree "$T/back/"
check "cp a tree down again: replaced in place, a stale part removed" eval '[ $RC = 0 ] && [ "$(tree_sig "$T/back/tree")" = "$(tree_sig "$T/tree")" ] && [ ! -e "$T/back/tree/tree" ] && [ -z "$(find "$T/back" -name "*.part")" ]'
# links in the sandbox pointing out of it (at / and at the host's paths):
# kept as links, never followed (nothing of the sandbox's / or host's read)
"$O" exec c1 'mkdir -p /workspace/esc && ln -sfn / /workspace/esc/root && ln -sfn /etc/shadow /workspace/esc/shadow && echo x > /workspace/esc/f' </dev/null
rc "$O" --json cp c1:/workspace/esc "$T/"
check "cp down links to / and out: recreated as links, not followed" \
    eval '[ $RC = 0 ] && jqo ".files == 1 and .links == 2" && [ "$(readlink "$T/esc/root")" = / ] && [ -L "$T/esc/shadow" ] && [ "$(ls "$T/esc" | wc -l)" = 3 ]'

# --- ls, rm ---
rc "$O" --json ls c1:/workspace/tree
check "ls --json: the listing" eval '[ $RC = 0 ] && jqo ".path == \"/workspace/tree\" and ([.entries[].name] | index(\"sub\"))"'
rc "$O" ls -r c1:/workspace/tree
check "ls -r (human): modes, types, link targets" eval '[ $RC = 0 ] && grep -q "^0600 file .*/workspace/tree/sub/deep/b$" "$T/out" && grep -q "symlink .* /workspace/tree/etc -> /etc$" "$T/out"'
rc "$O" ls c1:/workspace/nothere
check "ls of a missing path: exit 1, the API's message" eval '[ $RC = 1 ] && oneline && grep -q not_found "$T/err"'
rc "$O" rm c1:/workspace/tree
check "rm of a directory without -r: exit 1" test $RC = 1
rc "$O" --json rm -r c1:/workspace/esc
check "rm -r --json: {ok, deleted}" eval '[ $RC = 0 ] && jqo ".ok == true and .deleted >= 4"'

# --- hostile paths ---
printf 'dd\n' >"$T/dd"
rc "$O" cp "$T/dd" c1:/workspace/../../../../tmp/dotdot
check "cp to a path with ..: resolved inside the sandbox" \
    eval '[ $RC = 0 ] && [ "$("$O" exec c1 "cat /tmp/dotdot" </dev/null)" = dd ] && [ ! -e /tmp/dotdot ]'
rc "$O" cp c1:/workspace/../../../etc/hostname "$T/hn"
check "cp from a path with ..: the sandbox's file, not the host's" \
    eval '[ $RC = 0 ] && [ "$(cat "$T/hn")" = "$("$O" exec c1 "cat /etc/hostname" </dev/null)" ]'
rc "$O" cp "$T/dd" c1:/workspace/newdir/
check "cp into a new dir/: the file goes into it" eval '[ $RC = 0 ] && [ "$("$O" exec c1 "cat /workspace/newdir/dd" </dev/null)" = dd ]'
rc "$O" cp c1:/workspace/newdir/dd "$T/nodir/"
check "cp down into a missing local dir/: exit 1, nothing made" eval '[ $RC = 1 ] && grep -q "no such directory" "$T/err" && [ ! -e "$T/nodir" ]'
rc "$O" cp "$T/dd" "$T/dd2"
check "cp with no sandbox side: exit 2" test $RC = 2
rc "$O" cp c1:relative "$T/x"
check "cp with a relative sandbox path: exit 2" test $RC = 2

# --- apps ---
rc "$O" --json expose c1 8000 --name web
check "expose --json: url and token" eval '[ $RC = 0 ] && jqo ".name == \"web\" and .port == 8000 and (.url | test(\"^http\")) and (.token | length > 20)"'
rc "$O" expose c1 8001
check "expose (human): url, token and the open line" eval '[ $RC = 0 ] && grep -q "^token: " "$T/out" && grep -q "?token=" "$T/out"'
rc "$O" --json apps c1
check "apps --json: the apps, no token" eval '[ $RC = 0 ] && jqo "[.apps[].name] | index(\"web\")" && ! grep -q token "$T/out"'
rc "$O" --json unexpose c1 web
check "unexpose --json" eval '[ $RC = 0 ] && jqo ".unexposed == \"web\""'
rc "$O" unexpose c1 web
check "unexpose again: exit 1, not_found" eval '[ $RC = 1 ] && grep -q not_found "$T/err"'

# --- credential policy ---
printf '{"github":{"repositories":["acme/app","acme/lib"],"push":["refs/heads/agent/**"]}}' >"$T/p1"
printf '{"github":{"repositories":["acme/app"],"push":["refs/heads/agent/**"]}}' >"$T/p2"
printf '{"github":{"repositories":["*/*"]}}' >"$T/p3"
rc "$O" --json create c2 --policy "$T/p1"
check "create --policy: the session carries it" eval '[ $RC = 0 ] && jqo ".policy.github.repositories == [\"acme/app\",\"acme/lib\"]"'
rc "$O" --json policy c2
check "policy --json: {policy}" eval '[ $RC = 0 ] && jqo ".policy.github.push == [\"refs/heads/agent/**\"]"'
rc "$O" --json policy c2 "$T/p2"
check "policy narrowed" eval '[ $RC = 0 ] && jqo ".policy.github.repositories == [\"acme/app\"]"'
"$O" policy c2 - <"$T/p3" >"$T/out" 2>"$T/err"; RC=$?
check "policy widened: exit 1, would_widen" eval '[ $RC = 1 ] && oneline && grep -q would_widen "$T/err"'
rc "$O" --json policy c1
check "policy of a session without one: {policy:null}" eval '[ $RC = 0 ] && jqo ".policy == null"'

# --- homes ---
rc "$O" --json home nobody
check "home of a user without one: exists false" eval '[ $RC = 0 ] && jqo ".user == \"nobody\" and .exists == false"'
rc "$O" --json create h1 --user carol
check "a session for a user" test $RC = 0
rc "$O" --json home carol
check "home: exists, in use" eval '[ $RC = 0 ] && jqo ".exists == true and .in_use == true"'
rc "$O" home carol --delete
check "home --delete while in use: exit 1, in_use" eval '[ $RC = 1 ] && grep -q in_use "$T/err"'
rc "$O" delete h1
check "delete: 0" eval '[ $RC = 0 ] && grep -q deleted "$T/out"'
wait_until 20 eval '"$O" home carol --delete </dev/null >/dev/null 2>&1'
rc "$O" --json home carol
check "home --delete once free: gone" eval '[ $RC = 0 ] && jqo ".exists == false"'

# --- a hostile server: garbage, cut streams, bad listings ---
HP=$(free_port)
cat >"$T/bad.py" <<'PY'
import http.server, json, sys
BIG = 1 << 20
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def send(self, code, body, ctype="application/json", length=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0)); self.rfile.read(n)
        self.do_GET()
    def do_GET(self):
        p = self.path
        sid = p.split("/")[3] if p.count("/") >= 3 else ""
        entry = lambda path, t="file", size=BIG: {"path": path, "name": path.rsplit("/", 1)[1], "type": t,
                                             "size": size, "mode": "0644", "version": "00000000000000aa"}
        if sid == "garbage":
            self.wfile.write(b"\x00\x01 this is not HTTP\r\n\r\n"); self.close_connection = True; return
        if sid == "notjson":
            return self.send(200, b"<html>hello</html>", "text/html")
        if sid == "err500":
            return self.send(500, b"internal \x1b[31m oops\nsecond line", "text/plain")
        if "/exec" in p:
            if sid == "cut":   # a line, then half a line, then gone
                self.send_response(200); self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Connection", "close"); self.end_headers()
                self.wfile.write(b'{"s":"out","b":"aGkK"}\n{"s":"out","b":"aG'); self.wfile.flush()
                self.close_connection = True; return
            if sid == "junk":
                return self.send(200, b'{"s":"out","b":"aGkK"}\nnot json at all\n', "application/x-ndjson")
            return self.send(200, b'{"s":"out","b":"!!!!"}\n', "application/x-ndjson")
        if "list=1" in p:
            path = p.split("/files", 1)[1].split("?")[0]
            if sid == "midfile":
                ents = [entry(path)]
            elif sid == "toolong":
                ents = [entry(path, size=10)]
            elif sid == "escape" and "recursive" in p:
                ents = [entry("/w/d/ok", size=1), entry("/w/d/../../etc/x", size=1)]
            elif sid == "outside" and "recursive" in p:
                ents = [entry("/elsewhere/x", size=1)]
            elif sid == "viaLink" and "recursive" in p:
                ents = [{"path": "/w/d/l", "name": "l", "type": "symlink", "size": 4, "mode": "0777", "target": "/tmp"},
                        entry("/w/d/l/planted", size=1)]
            elif sid == "nul" and "recursive" in p:
                return self.send(200, b'{"path":"/w/d","entries":[{"path":"/w/d/a\\u0000/../../x","name":"x","type":"file","size":1,"mode":"0644","version":"aa"}],"truncated":false}')
            else:
                ents = []
            return self.send(200, json.dumps({"path": path, "entries": ents, "truncated": False}).encode())
        if sid == "midfile":   # Content-Length 1 MiB, 1000 bytes, gone
            self.send_response(200); self.send_header("Content-Length", str(BIG))
            self.send_header("X-File-Version", "00000000000000aa"); self.end_headers()
            self.wfile.write(b"y" * 1000); self.wfile.flush(); self.close_connection = True; return
        if sid == "toolong":   # the listing said 10 bytes: 1 MiB comes
            return self.send(200, b"w" * BIG, "application/octet-stream")
        if "/files/" in p:
            self.send_response(200); self.send_header("Content-Length", "1")
            self.send_header("X-File-Version", "00000000000000aa"); self.end_headers()
            self.wfile.write(b"z"); return
        self.send(404, b'{"error":{"code":"not_found","message":"no"}}')
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$T/bad.py" "$HP" &
track_pid $!
wait_port "$HP"
B_URL=http://127.0.0.1:$HP
bad() { rc "$O" --url "$B_URL" "$@"; }
bad show garbage
check "a server answering garbage: exit 1, one clear line" eval '[ $RC = 1 ] && oneline && grep -qi "HTTP/0.9\|weird server reply" "$T/err"'
bad show notjson
check "a server answering HTML: exit 1, not JSON" eval '[ $RC = 1 ] && oneline && grep -q "not JSON" "$T/err"'
bad show err500
check "a 500 with a garbage body: exit 1, one line, its start escaped" eval '[ $RC = 1 ] && oneline && grep -q "not the API.s error JSON: internal .x1b" "$T/err"'
bad exec cut true
check "exec stream cut mid-line: 123, the output before it, status unknown" \
    eval '[ $RC = 123 ] && [ "$(cat "$T/out")" = hi ] && oneline && grep -q unknown "$T/err"'
bad exec junk true
check "exec stream with a line not JSON: 125, says so" eval '[ $RC = 125 ] && oneline && grep -q "not the protocol" "$T/err"'
bad exec b64 true
check "exec stream with bad base64: 125, nothing written" eval '[ $RC = 125 ] && [ ! -s "$T/out" ]'
mkdir "$T/h"
bad cp midfile:/w/f "$T/h/f"
check "a download cut mid-body: exit 1, no target" eval '[ $RC = 1 ] && oneline && [ ! -e "$T/h/f" ]'
rm -f "$T/h"/.f.*
bad cp toolong:/w/f "$T/h/f"
check "a download longer than its listing: stopped, no target, no part" \
    eval '[ $RC = 1 ] && grep -q "more bytes came" "$T/err" && [ -z "$(ls -A "$T/h")" ]'
bad cp escape:/w/d "$T/h/"
check "a listing naming ../..: refused, nothing written out of the tree" \
    eval '[ $RC = 1 ] && grep -q "bad path" "$T/err" && [ ! -e "$T/etc/x" ] && [ ! -e "$T/h/d" ]'
bad cp outside:/w/d "$T/h/o"
check "a listing naming a path outside the source: refused, nothing made" eval '[ $RC = 1 ] && grep -q "outside" "$T/err" && [ ! -e "$T/h/o" ]'
mkdir -p "$T/plant"
bad cp viaLink:/w/d "$T/h/v"
check "a listing writing through a link it made: refused, nothing written there" \
    eval '[ $RC = 1 ] && grep -q "not a directory made here" "$T/err" && [ ! -e /tmp/planted ]'
bad cp nul:/w/d "$T/h/n"
check "a listing with a NUL in a path: refused" eval '[ $RC = 1 ] && grep -q NUL "$T/err" && [ ! -e "$T/x" ]'
rc "$O" --url http://127.0.0.1:1 list
check "nothing listening: exit 1, one line" eval '[ $RC = 1 ] && oneline'

# --- bash completion ---
check "bash completion loads and completes commands" bash -c '. "$1/cli/orch.bash" && COMP_WORDS=(orch ex) COMP_CWORD=1 && _orch && [ "${COMPREPLY[*]}" = "exec expose" ]' _ "$TOP"

"$O" delete c1 </dev/null >/dev/null 2>&1
"$O" delete c2 </dev/null >/dev/null 2>&1
rc "$O" --json delete c3
check "delete --json: {deleted}" eval '[ $RC = 0 ] && jqo ".deleted == \"c3\""'
