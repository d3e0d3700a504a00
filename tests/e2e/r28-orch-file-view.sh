#!/usr/bin/env bash
# r28-orch-file-view.sh: the file API sees a sandbox as its own commands
# do (issue 28), through the real orchestrator on real local sandboxes.
# - Links a sandbox plants (absolute, relative, chains, final component,
#   intermediate directory; in /workspace and /tmp) toward the agent's
#   state (/run/agent/state), /proc's magic links (/proc/1/root,
#   /proc/self/fd/N, /proc/1/cwd), another sandbox's files and the host's
#   /etc/shadow, for every file operation: REST GET/PUT/DELETE/listing,
#   MCP read_file/write_file/list_files/delete_file and the edit tool.
# - A running job's record forged through a link with every write path:
#   shell_poll still says running with the real output.
# - Limits on every path: /run (64 MiB), /tmp (local.tmp_bytes), a small
#   disk and a full home through REST PUT (507 no_space) and MCP
#   write_file (a tool error), nothing left behind on the host.
# - Homes: a REST PUT and a write_file into /home/user work and give the
#   owner a `touch` would (root and run_as_root: false).
# - A differential check: for a set of paths, the file API and a shell
#   command see the same files, bytes and error class.
# - The file helper is out of the sandbox's sight and comes back when
#   killed.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/mcp/orch-lib.sh"

if [ "$ORCH_RT" != local ]; then skip "the sandbox's file view needs the local runtime (root, bwrap)"; exit 0; fi
ORCH_LOCAL_YAML="$ORCH_LOCAL_YAML
  tmp_bytes: 24MiB"
orch_config "homes:" "  size: 16MiB"
check "orch starts" orch_start
A=(-H "Authorization: Bearer $ORCH_KEY")
S=r28-a		# root, user alice
U=r28-u		# run_as_root false, user bob
D=r28-d		# a 32 MiB disk
mk() { rest POST /v1/sessions -H 'Content-Type: application/json' -d "$1" -w ' %{http_code}'; }
check "session $S (root, user alice)" contains <(mk "{\"id\":\"$S\",\"user\":\"alice\"}") ' 201'
check "session $U (run_as_root false, user bob)" contains <(mk "{\"id\":\"$U\",\"user\":\"bob\",\"run_as_root\":false}") ' 201'
check "session $D (a 32 MiB disk)" contains <(mk "{\"id\":\"$D\",\"disk\":\"32MiB\"}") ' 201'
sb() { rest GET "/v1/sessions/$1" | jq -r .sandbox_id; }
SBA=$(sb $S) SBU=$(sb $U) SBD=$(sb $D)

# mcpu SID USER NAME ARGS: a tool call's text (isError: "ERROR: ").
mcpu() {
	local sid=$1 user=$2 name=$3 args=$4 uh=()
	[ -n "$user" ] && uh=(-H "X-User-Id: $user")
	mcp_tool "$sid" "$name" "$args" --max-time 120 "${uh[@]}"
}
user_of() { case $1 in "$S") echo alice ;; "$U") echo bob ;; *) echo "" ;; esac; }
# sh_in SID COMMAND: the command's output (the status line dropped)
sh_in() { mcpu "$1" "$(user_of "$1")" shell "$(jq -cn --arg c "$2" '{command:$c}')" | sed '${/^\[exit code/d}'; }
tool() { mcpu "$1" "$(user_of "$1")" "$2" "$3"; }
j() { jq -cn "$@"; }
# REST: rget SID PATH -> "CODE SHA" (the body's sha256, or - when empty)
F() { echo "$ORCH_URL/v1/sessions/$1/files$2"; }
rget() {
	local code
	code=$(curl -s "${A[@]}" -o "$T/body" -w '%{http_code}' "$(F "$1" "$2")")
	echo "$code $([ -s "$T/body" ] && sha256sum <"$T/body" | cut -c1-16 || echo -)"
}
rput() { curl -s "${A[@]}" -o "$T/put.out" -w '%{http_code}' -T "$3" "$(F "$1" "$2")"; }
rdel() { curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -X DELETE "$(F "$1" "$2")"; }
rls() { curl -s "${A[@]}" "$(F "$1" "$2")?list=1"; }
has() { grep -qF -- "$2" <<<"$1"; }
hasnt() { ! grep -qF -- "$2" <<<"$1"; }

# ---------------------------------------------------------------------
# The agent's state behind planted links: a job's record forged through a
# link by every write path, and every read path kept out of it.
out=$(mcpu $S alice shell_async "$(j '{command:"echo real-output; sleep 45; echo late"}')")
jid=$(sed -n 's/^Started job \([^ ]*\).*/\1/p' <<<"$out")
check "a long job started ($jid)" test -n "$jid"
sh_in $S "mkdir -p /workspace/dir; echo inner > /workspace/dir/inner; echo plain > /workspace/plain
ln -sfn /run/agent/state /workspace/st
ln -sfn ../run/agent/state /workspace/rel
ln -sfn /run/agent /tmp/t1
ln -sfn /workspace/c2 /workspace/c1; ln -sfn /run/agent/state/jobs /workspace/c2
ln -sfn /run/agent/state/jobs/$jid/exit.json /workspace/fin
ln -sfn /run/agent/state/jobs/$jid /workspace/mid
ln -sfn /run/agent/state/jobs/$jid/output /tmp/fout
ln -sfn /proc/1/root /workspace/p1; ln -sfn /proc/self/fd /workspace/pfd
ln -sfn /proc/1/cwd /workspace/pcwd; ln -sfn /proc/self/root /workspace/pself
ln -sfn /proc/$$/cwd /workspace/pshell
echo sandbox-shadow > /etc/shadow; ln -sfn /etc/shadow /workspace/hs
ln -sfn $ORCH_SBX_DIR/$SBU/record.json /workspace/other
ln -sfn $ORCH_SBX_DIR /workspace/otherdir" >/dev/null
forged='{"exit_code":0,"signal":null,"oom_killed":false,"ended_ms":1}'
printf '%s\n' "$forged" > "$T/forged"
printf 'ALL TESTS PASSED\n' > "$T/fout"
# every write path, through each kind of link, at the job's record
for p in /workspace/st/jobs/$jid/exit.json /workspace/rel/jobs/$jid/exit.json \
    /tmp/t1/state/jobs/$jid/exit.json /workspace/c1/$jid/exit.json /workspace/fin \
    /workspace/mid/exit.json /workspace/p1/run/agent/state/jobs/$jid/exit.json; do
	rput $S "$p" "$T/forged" >/dev/null
	tool $S write_file "$(j --arg p "$p" --arg c "$forged" '{path:$p,content:$c}')" >/dev/null
	tool $S str_replace_based_edit_tool "$(j --arg p "$p" --arg c "$forged" '{command:"create",path:$p,file_text:$c}')" >/dev/null
done
for p in /workspace/st/jobs/$jid/output /workspace/mid/output /tmp/fout /workspace/c1/$jid/output; do
	rput $S "$p" "$T/fout" >/dev/null
	tool $S write_file "$(j --arg p "$p" '{path:$p,content:"ALL TESTS PASSED\n",append:true}')" >/dev/null
	tool $S str_replace_based_edit_tool "$(j --arg p "$p" '{command:"str_replace",path:$p,old_str:"real-output",new_str:"ALL TESTS PASSED"}')" >/dev/null
	tool $S str_replace_based_edit_tool "$(j --arg p "$p" '{command:"insert",path:$p,insert_line:0,insert_text:"ALL TESTS PASSED"}')" >/dev/null
done
out=$(mcpu $S alice shell_poll "$(j --arg id "$jid" '{job_id:$id}')")
check "forged through links: shell_poll still says running" has "$out" "[job $jid: running"
check "forged through links: the real output, not the forged one" eval 'has "$out" real-output && hasnt "$out" "ALL TESTS PASSED"'
# the planted paths land in the sandbox's own /run (or nowhere), as a
# command's would: what the shell sees there is what the API wrote
out=$(sh_in $S "ls -R /run/agent 2>&1 | head -20")
check "the writes went to the sandbox's own /run/agent, not the agent's" hasnt "$out" "status.json"

# every read path, through the same links
for p in /workspace/st/jobs/$jid/status.json /workspace/rel/jobs/$jid/output /tmp/t1/agent.sock \
    /workspace/c1/$jid/status.json /workspace/mid/output /workspace/p1/run/agent/state/jobs/$jid/status.json \
    /run/agent/state/jobs/$jid/status.json; do
	r=$(rget $S "$p")
	check "REST GET $p: not the agent's state ($r)" test "${r%% *}" = 404 -o "${r%% *}" = 422
	out=$(tool $S read_file "$(j --arg p "$p" '{path:$p}')")
	check "read_file $p: an error" eval 'has "$out" "ERROR:" && hasnt "$out" wrapper_pid && hasnt "$out" real-output'
	out=$(tool $S str_replace_based_edit_tool "$(j --arg p "$p" '{command:"view",path:$p}')")
	check "edit view $p: an error" eval 'has "$out" "ERROR:" && hasnt "$out" real-output'
done
for p in /workspace/st /workspace/st/jobs /workspace/c1 /workspace/mid /tmp/t1 /workspace/p1/run/agent; do
	out=$(curl -s "${A[@]}" "$(F $S "$p")/?recursive=1")
	check "REST listing $p/: nothing of the agent's" eval 'hasnt "$out" "$jid" && hasnt "$out" agent.sock'
	out=$(tool $S list_files "$(j --arg p "$p" '{path:$p,recursive:true}')")
	check "list_files $p: nothing of the agent's" eval 'hasnt "$out" "$jid" && hasnt "$out" agent.sock'
	out=$(tool $S str_replace_based_edit_tool "$(j --arg p "$p" '{command:"view",path:$p}')")
	check "edit view $p (a directory): nothing of the agent's" eval 'hasnt "$out" "$jid" && hasnt "$out" agent.sock'
done
for p in /workspace/st/jobs/$jid /workspace/mid/output /workspace/c1/$jid/script /tmp/t1/state; do
	rdel $S "$p?recursive=1" >/dev/null
	tool $S delete_file "$(j --arg p "$p" '{path:$p,recursive:true}')" >/dev/null
done
out=$(mcpu $S alice shell_poll "$(j --arg id "$jid" '{job_id:$id}')")
check "deletes through links: the job's record and spool are still there" eval 'has "$out" "[job $jid: running" && has "$out" real-output'

# /proc's magic links: the helper's /proc/self names nothing, /proc/1's
# root and cwd are refused; the agent's log (its fd 2, a host file) never
# comes out
logline=$(grep -m1 -o 'listening on [^ ]*' "$ORCH_SBX_DIR/$SBA/log")
for p in /workspace/pfd/2 /proc/self/fd/2 /workspace/pself/run/agent/state/jobs/$jid/status.json \
    /proc/self/root/etc/passwd /workspace/p1/etc/passwd /workspace/pcwd/plain /proc/1/root/etc/passwd; do
	r=$(rget $S "$p")
	check "REST GET $p: refused ($r)" eval '[ "${r%% *}" != 200 ] && ! grep -qF "$logline" "$T/body"'
	out=$(tool $S read_file "$(j --arg p "$p" '{path:$p}')")
	check "read_file $p: refused" eval 'has "$out" "ERROR:" && hasnt "$out" "$logline"'
done
code=$(rput $S /workspace/p1/workspace/viaproc "$T/forged")
check "REST PUT through /proc/1/root: refused ($code)" test "$code" != 201 -a "$code" != 200
# every other operation through the magic links: refused, nothing changed
for p in /workspace/p1/workspace /workspace/pcwd /workspace/pshell /workspace/pfd/2/x; do
	out=$(curl -s "${A[@]}" "$(F $S "$p")/")
	check "REST listing $p/: refused" eval 'hasnt "$out" "\"entries\"" && hasnt "$out" plain'
	out=$(tool $S list_files "$(j --arg p "$p" '{path:$p}')")
	check "list_files $p: refused" has "$out" "ERROR:"
	out=$(tool $S str_replace_based_edit_tool "$(j --arg p "$p" '{command:"view",path:$p}')")
	check "edit view $p: refused" has "$out" "ERROR:"
	out=$(tool $S write_file "$(j --arg p "$p/viaproc" '{path:$p,content:"x"}')")
	check "write_file $p/viaproc: refused" has "$out" "ERROR:"
	out=$(tool $S str_replace_based_edit_tool "$(j --arg p "$p/plain" '{command:"str_replace",path:$p,old_str:"plain",new_str:"changed"}')")
	check "edit str_replace $p/plain: refused" has "$out" "ERROR:"
	code=$(rdel $S "$p/plain")
	out=$(tool $S delete_file "$(j --arg p "$p/plain" '{path:$p}')")
	check "DELETE and delete_file $p/plain: refused ($code)" eval '[ "$code" != 200 ] && has "$out" "ERROR:"'
done
out=$(sh_in $S 'cat /workspace/plain; ls /workspace | grep -c viaproc')
check "through /proc: /workspace/plain unchanged, nothing written" test "$out" = "plain
0"

# the host and another sandbox: only the sandbox's own files
r=$(rget $S /workspace/hs)
check "a link to /etc/shadow reads the sandbox's, not the host's" eval 'grep -qx sandbox-shadow "$T/body" && ! cmp -s "$T/body" /etc/shadow'
check "a link to another sandbox's record (a host path): 404" test "$(rget $S /workspace/other | cut -d' ' -f1)" = 404
code=$(rput $S /workspace/otherdir/$SBU/planted "$T/forged")
check "a PUT toward the host's state directory writes nothing there" test ! -e "$ORCH_SBX_DIR/$SBU/planted"
out=$(tool $S write_file "$(j --arg p "/workspace/otherdir/$SBU/planted2" '{path:$p,content:"x"}')")
check "write_file toward the host's state directory writes nothing there" test ! -e "$ORCH_SBX_DIR/$SBU/planted2"
# every write and delete path at the host's /etc/shadow and another
# sandbox's record through links: the host's files stay as they were
hs0=$(sha256sum < /etc/shadow) rec0=$(sha256sum < "$ORCH_SBX_DIR/$SBU/record.json")
for p in /workspace/hs /workspace/other /workspace/otherdir/$SBU/record.json; do
	rput $S "$p" "$T/forged" >/dev/null
	tool $S write_file "$(j --arg p "$p" '{path:$p,content:"x",append:true}')" >/dev/null
	tool $S str_replace_based_edit_tool "$(j --arg p "$p" '{command:"insert",path:$p,insert_line:0,insert_text:"x"}')" >/dev/null
	rdel $S "$p" >/dev/null
	tool $S delete_file "$(j --arg p "$p" '{path:$p}')" >/dev/null
done
check "the host's /etc/shadow unchanged by every write path" test "$(sha256sum < /etc/shadow)" = "$hs0"
check "another sandbox's record unchanged and in place" test "$(sha256sum < "$ORCH_SBX_DIR/$SBU/record.json")" = "$rec0"
sh_in $S "ln -sfn /etc/shadow /workspace/hs; ln -sfn $ORCH_SBX_DIR/$SBU/record.json /workspace/other" >/dev/null

# ---------------------------------------------------------------------
# Homes: the file API writes /home/user with a command's owner.
echo via-rest > "$T/h1"
code=$(rput $S /home/user/put-root "$T/h1")
check "REST PUT into /home/user (root): 201 ($code)" test "$code" = 201
out=$(tool $S write_file '{"path":"/home/user/wf-root","content":"via-mcp\n"}')
check "write_file into /home/user (root)" has "$out" "Created /home/user/wf-root"
out=$(sh_in $S 'touch /home/user/t; stat -c %u:%g /home/user/t /home/user/put-root /home/user/wf-root; cat /home/user/put-root /home/user/wf-root')
check "root: the PUT's and write_file's owner is touch's (0:0)" test "$(head -3 <<<"$out" | sort -u)" = "0:0"
check "root: the shell reads what REST and MCP wrote" eval 'has "$out" via-rest && has "$out" via-mcp'
code=$(rput $U /home/user/put-u "$T/h1")
out=$(tool $U write_file '{"path":"/home/user/wf-u","content":"via-mcp\n"}')
out=$(sh_in $U 'touch /home/user/t; stat -c %u:%g /home/user/t /home/user/put-u /home/user/wf-u')
check "run_as_root false: PUT and write_file owned as touch's (1000:1000)" test "$(sort -u <<<"$out")" = "1000:1000"
code=$(rput $U /etc/not-mine "$T/h1")
sh=$(sh_in $U 'touch /etc/not-mine2 2>/dev/null && echo wrote || echo refused')
check "run_as_root false: a root-owned directory refuses the PUT as it refuses touch ($code, $sh)" eval '[ "$code" = 422 ] && [ "$sh" = refused ]'

# ---------------------------------------------------------------------
# A differential check: the file API and the shell see the same files.
sh_in $S 'echo run-file > /run/rf; echo tmp-file > /tmp/tf; echo home-file > /home/user/hf
ln -sfn /workspace/plain /workspace/lf; ln -sfn /workspace/dir /workspace/ld
ln -sfn /workspace/nothere /workspace/dang' >/dev/null
paths="/workspace/plain /workspace/lf /workspace/ld/inner /workspace/dang /workspace/st/jobs
/run/agent/state/jobs /run/agent/agent.sock /workspace/p1/etc/passwd /workspace/pcwd/plain
/home/user/hf /run/rf /tmp/tf /tmp/t1/state /workspace/hs /workspace/other"
for p in $paths; do
	sh=$(sh_in $S "if cat $p > /tmp/.d 2>/dev/null; then echo \"200 \$( [ -s /tmp/.d ] && sha256sum < /tmp/.d | cut -c1-16 || echo -)\"; else echo err; fi")
	r=$(rget $S "$p")
	[ "${r%% *}" = 200 ] || r=err
	check "same bytes or error: cat $p ($sh) vs GET ($r)" test "$sh" = "$r"
	sh=$(sh_in $S "test -e $p && echo yes || echo no")
	l=$(rls $S "$p" | jq -r 'if .entries then "yes" else "no" end')
	check "same existence: test -e $p ($sh) vs listing ($l)" test "$sh" = "$l"
done
for p in /workspace/ld /run /home/user /tmp/t1 /workspace/st; do
	sh=$(sh_in $S "ls -A1 $p 2>/dev/null | sort | tr '\n' ' '")
	l=$(curl -s "${A[@]}" "$(F $S "$p")/" | jq -r '[.entries[]?.name] | sort | join(" ")')
	check "same names: ls -A $p ($sh) vs listing ($l)" test "$(echo $sh)" = "$(echo $l)"
done
for p in /workspace/plain /workspace/lf /home/user/hf /run/rf; do
	sh=$(sh_in $S "stat -c '%s %a' $p 2>&1 | head -1")
	l=$(rls $S "$p" | jq -r '.entries[0] | "\(.size) \(.mode | ltrimstr("0"))"')
	check "same lstat: $p ($sh) vs listing ($l)" test "$sh" = "$l"
done
for p in /run/w1 /tmp/w1 /home/user/w1 /workspace/ld/w1 /workspace/dang /tmp/t1/w1; do
	printf 'write %s\n' "$p" > "$T/w"
	code=$(rput $S "$p" "$T/w")
	sh=$(sh_in $S "cat $p 2>/dev/null || echo missing")
	case $code in 20[01]) want="write $p" ;; *) want=missing ;; esac
	check "a PUT to $p ($code) is what the shell then reads" test "$sh" = "$want"
done
out=$(sh_in $S 'cat /workspace/nothere')
check "a PUT through a dangling link writes its target, as > would" test "$out" = "write /workspace/dang"

# ---------------------------------------------------------------------
# The helper: out of the sandbox's sight, and replaced when it dies.
apid=$(pgrep -P "$(awk '{print $3}' "$ORCH_SBX_DIR/$SBA/pid")" | head -1)
helper() { pgrep -P "$apid" -x agent-files | head -1; }
hp=$(helper)
check "the helper runs below the agent" test -n "$hp"
out=$(sh_in $S 'cat /proc/[0-9]*/comm 2>/dev/null | grep -c agent-files')
check "the file helper is not among the sandbox's processes" test "$out" = 0
sh_in $S 'kill -9 -1' >/dev/null 2>&1
check "kill -9 -1 from inside does not reach it" eval '[ -n "$hp" ] && [ "$(helper)" = "$hp" ]'
[ -n "$hp" ] && kill -9 "$hp"
check "after the helper is killed, the next file call works" test "$(rget $S /workspace/plain | cut -d' ' -f1)" = 200
check "a new helper took its place" eval '[ -n "$(helper)" ] && [ "$(helper)" != "$hp" ]'

# ---------------------------------------------------------------------
# Limits on every path: /run, /tmp, the disk, a full home.
head -c $((70 * 1048576)) /dev/zero > "$T/70m"
code=$(rput $S /run/big "$T/70m")
check "REST PUT past /run's 64 MiB: 507 ($code)" test "$code" = 507
check "507 says no_space" test "$(jq -r .error.code "$T/put.out")" = no_space
out=$(sh_in $S 'ls -a /run | grep -c -e big -e agent-; df -k /run | tail -1')
check "nothing of it left in /run" test "$(head -1 <<<"$out")" = 0
sh_in $S 'dd if=/dev/zero of=/run/fill bs=1M count=64 2>/dev/null' >/dev/null
head -c 90000 /dev/zero | tr '\0' x > "$T/90k"
head -c 60000 /dev/urandom | base64 -w0 > "$T/b64"
out=$(tool $S write_file "$(j --rawfile c "$T/90k" '{path:"/run/more",content:$c}')")
check "write_file into a full /run: a tool error saying no_space" has "$out" "ERROR: write_file failed (no_space)"
sh_in $S 'rm -f /run/fill' >/dev/null
head -c $((30 * 1048576)) /dev/zero > "$T/30m"
code=$(rput $S /tmp/big "$T/30m")
check "REST PUT past /tmp's 24 MiB (local.tmp_bytes): 507 ($code)" test "$code" = 507
out=$(sh_in $S 'ls -a /tmp | grep -c -e big -e agent-')
check "nothing of it left in /tmp" test "$out" = 0
# the disk: 32 MiB, through REST and MCP; the host keeps the image's size
img=$ORCH_SBX_DIR/$SBD/disk.img
u0=$(du -k "$img" | cut -f1)
head -c $((40 * 1048576)) /dev/urandom > "$T/40m"
code=$(rput $D /workspace/big "$T/40m")
check "REST PUT past a 32 MiB disk: 507 ($code)" test "$code" = 507
sh_in $D 'dd if=/dev/zero of=/workspace/fill bs=64k 2>/dev/null; sync' >/dev/null
out=$(tool $D write_file "$(j --rawfile c "$T/b64" '{path:"/workspace/w",content:$c,encoding:"base64"}')")
check "write_file into a full disk: a tool error saying no_space" has "$out" "no_space"
out=$(tool $D str_replace_based_edit_tool "$(j --rawfile c "$T/90k" '{command:"create",path:"/workspace/e",file_text:$c}')")
check "the edit tool's create on a full disk: a tool error saying no_space" has "$out" "ERROR: create failed (no_space)"
out=$(sh_in $D 'ls -a /workspace | grep -c agent-')
check "no temporary file left on the disk" test "$out" = 0
u1=$(du -k "$img" | cut -f1)
echo "disk image: ${u0} KiB allocated before, ${u1} KiB after filling"
check "the disk image never passed its size on the host (${u1} KiB)" test "$u1" -le $((32 * 1024 + 64))
check "no temporary file in the host's state directory" test -z "$(find "$ORCH_SBX_DIR" -name '*.agent-*' 2>/dev/null | head -1)"
sd=$(du -sk --exclude=disk.img "$ORCH_SBX_DIR/$SBD" | cut -f1)
check "the sandbox's state directory holds nothing of it beside the image (${sd} KiB)" test "$sd" -le 1024
# a full home (alice's 16 MiB)
sh_in $S 'dd if=/dev/zero of=/home/user/fill bs=64k 2>/dev/null; sync' >/dev/null
head -c 2097152 /dev/urandom > "$T/2m"
code=$(rput $S /home/user/more "$T/2m")
check "REST PUT into a full home: 507 ($code)" test "$code" = 507
code=$(curl -s "${A[@]}" -o /dev/null -w '%{http_code}' -T - "$(F $S /home/user/more4)" < "$T/2m")
check "a chunked REST PUT into a full home: 507 ($code)" test "$code" = 507
out=$(tool $S write_file "$(j --rawfile c "$T/b64" '{path:"/home/user/more2",content:$c,encoding:"base64"}')")
check "write_file into a full home: a tool error saying no_space" has "$out" "no_space"
out=$(sh_in $S 'dd if=/dev/zero of=/home/user/more3 bs=64k count=40 2>&1 | grep -c "No space left"; ls -a /home/user | grep -c -e agent- -e "^more[24]*$"')
check "a command in the full home: ENOSPC" test "$(head -1 <<<"$out")" = 1
check "nothing of the API's writes left in the home" test "$(tail -1 <<<"$out")" = 0
hm=$ORCH_STATE/homes/u-alice/home.img
check "the home image never passed its size on the host" test "$(du -k "$hm" | cut -f1)" -le $((16 * 1024 + 64))

check "daemon still up" kill -0 "$ORCH_PID"
