#!/usr/bin/env bash
# 32-agent-files: view / create / str_replace / insert / raw read and write,
# atomic writes that keep the mode, and every error path.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/agent.sh"

check "agent starts" start_agent
WS=$(cd "$T/ws" && pwd -P)
fapi() { api POST "/v1/files/$1" "$2"; }
# fstatus NAME CODE OP JSON: file op OP answers HTTP status CODE.
fstatus() { fapi "$3" "$4"; check "$1" test "$(status)" = "$2"; }
# raw_put QUERY DATA: PUT /v1/files/raw?QUERY with curl --data-binary DATA.
raw_put() {
	curl -s --unix-socket "$SOCK" -X PUT --data-binary "$2" -o "$T/body" \
	    -w '%{http_code}' "http://a/v1/files/raw?$1" >"$T/status"
}

# create: parents made, content exact, atomic (no temp files left).
fapi create '{"path":"a/b/c.txt","file_text":"alpha\nbeta\n  gamma\nbeta\n"}'
check "create: 200, created" test "$(j '.ok and .created')" = true
check "create: reply is the JSON and nothing after it" test "$(tr -d '\000' <"$T/body" | wc -c)" = "$(wc -c <"$T/body")"
check "create: parents and content" test "$(cat "$WS/a/b/c.txt")" = "$(printf 'alpha\nbeta\n  gamma\nbeta')"
check "create: no temp file left" test "$(ls -A "$WS/a/b")" = c.txt
fapi create '{"path":"'"$WS"'/abs.txt","file_text":""}'
check "create: absolute path, empty file" test -f "$WS/abs.txt" -a ! -s "$WS/abs.txt"

# view.
fapi view '{"path":"a/b/c.txt"}'
check "view: numbered lines" test "$(j .content)" = "$(printf '     1\talpha\n     2\tbeta\n     3\t  gamma\n     4\tbeta')"
fapi view '{"path":"a/b/c.txt","view_range":[2,3]}'
check "view_range [2,3]" test "$(j .content)" = "$(printf '     2\tbeta\n     3\t  gamma')"
fapi view '{"path":"a/b/c.txt","view_range":[3,-1]}'
check "view_range [3,-1]" test "$(j .content)" = "$(printf '     3\t  gamma\n     4\tbeta')"
fapi view '{"path":"a/b/c.txt","view_range":[0,2]}'
check "view_range start 0: 422 with the line count" test "$(status)" = 422 -a "$(j '.error.message | test("between 1 and 4")')" = true
fstatus "view_range end < start: 422" 422 view '{"path":"a/b/c.txt","view_range":[3,2]}'
fstatus "view_range malformed: 400" 400 view '{"path":"a/b/c.txt","view_range":[1]}'
fapi view '{"path":"missing.txt"}'
check "view missing: 404" test "$(status)" = 404 -a "$(j .error.code)" = not_found
head -c 300 /dev/urandom >"$WS/blob.bin"; printf 'x\0y' >>"$WS/blob.bin"
fapi view '{"path":"blob.bin"}'
check "view binary: 422 saying binary" test "$(status)" = 422 -a "$(j '.error.message | test("binary")')" = true
check "view binary: its own code, binary_file" test "$(j .error.code)" = binary_file

# directory listing: two levels, hidden skipped.
mkdir -p "$WS/d1/d2/d3" "$WS/.hidden"; touch "$WS/d1/f1" "$WS/d1/d2/f2" "$WS/d1/d2/d3/f3" "$WS/.hidden/h" "$WS/d1/.dot"
fapi view '{"path":"."}'
check "view dir: listing" test "$(j '.content | test("/d1/\n") and test("/d1/f1\n") and test("/d1/d2/\n")')" = true
check "view dir: two levels only" test "$(j '.content | test("f2|d3") | not')" = true
check "view dir: hidden skipped" test "$(j '.content | test("/[.]hidden|/[.]dot") | not')" = true

# str_replace.
fapi str_replace '{"path":"a/b/c.txt","old_str":"beta","new_str":"B"}'
check "str_replace 2 matches: 422, count and lines" test "$(status)" = 422 -a "$(j '.error.message | test("2 times \\(lines 2, 4\\)")')" = true
fapi str_replace '{"path":"a/b/c.txt","old_str":"delta","new_str":"D"}'
check "str_replace 0 matches: 422 with hint" test "$(status)" = 422 -a "$(j '.error.code == "edit_failed" and (.error.message | test("0 matches"))')" = true
fapi str_replace '{"path":"a/b/c.txt","old_str":"beta\ngamma","new_str":"D"}'
check "str_replace whitespace hint" test "$(j '.error.message | test("whitespace is ignored")')" = true
chmod 0751 "$WS/a/b/c.txt"
fapi str_replace '{"path":"a/b/c.txt","old_str":"  gamma\nbeta\n","new_str":"  GAMMA\n"}'
check "str_replace unique: 200 with snippet" test "$(j '.ok and (.snippet | test("3\t  GAMMA"))')" = true
check "str_replace: content" test "$(cat "$WS/a/b/c.txt")" = "$(printf 'alpha\nbeta\n  GAMMA')"
check "str_replace: mode kept" test "$(stat -c %a "$WS/a/b/c.txt")" = 751
check "str_replace: no temp file left" test "$(ls -A "$WS/a/b")" = c.txt
fstatus "str_replace empty old_str: 422" 422 str_replace '{"path":"a/b/c.txt","old_str":"","new_str":"x"}'
fstatus "str_replace on binary: 422" 422 str_replace '{"path":"blob.bin","old_str":"x","new_str":"y"}'
fstatus "str_replace missing file: 404" 404 str_replace '{"path":"nope.txt","old_str":"x","new_str":"y"}'
fstatus "str_replace on a directory: 422" 422 str_replace '{"path":"a","old_str":"x","new_str":"y"}'

# insert.
fapi insert '{"path":"a/b/c.txt","insert_line":0,"insert_text":"top"}'
fapi insert '{"path":"a/b/c.txt","insert_line":4,"insert_text":"end\n"}'
check "insert top and end (no final newline before)" test "$(cat "$WS/a/b/c.txt")" = "$(printf 'top\nalpha\nbeta\n  GAMMA\nend')"
fapi insert '{"path":"a/b/c.txt","insert_line":2,"insert_text":"mid1\nmid2"}'
check "insert middle: snippet" test "$(j '.snippet | test("3\tmid1\n     4\tmid2")')" = true
fapi insert '{"path":"a/b/c.txt","insert_line":99,"insert_text":"x"}'
check "insert past the end: 422 with the line count" test "$(status)" = 422 -a "$(j '.error.message | test("between 0")')" = true
fstatus "insert without insert_line: 400" 400 insert '{"path":"a/b/c.txt","insert_text":"x"}'

# raw read/write.
head -c 100000 /dev/urandom >"$T/rand"
raw_put "path=raw/dir/r%20a.bin&mode=0640" @"$T/rand"
check "raw put: 200 bytes" test "$(status)" = 200 -a "$(j .bytes)" = 100000
check "raw put: exact bytes, mode" bash -c "cmp -s '$T/rand' '$WS/raw/dir/r a.bin' && test \$(stat -c %a '$WS/raw/dir/r a.bin') = 640"
curl -s --unix-socket "$SOCK" -o "$T/got" -w '%{http_code} %{content_type}' "http://a/v1/files/raw?path=raw%2Fdir%2Fr+a.bin" >"$T/status"
check "raw get: exact bytes, octet-stream" bash -c "cmp -s '$T/rand' '$T/got' && grep -q '200 application/octet-stream' '$T/status'"
ln -s "$WS/raw/dir/r a.bin" "$WS/link"
curl -s --unix-socket "$SOCK" -X PUT --data-binary 'via-link' -o /dev/null "http://a/v1/files/raw?path=link"
check "raw put through a symlink writes its target" test "$(cat "$WS/raw/dir/r a.bin")" = via-link -a -L "$WS/link"
api GET "/v1/files/raw?path=missing"
check "raw get missing: 404" test "$(status)" = 404
api GET "/v1/files/raw"
check "raw get without path: 400" test "$(status)" = 400
api GET "/v1/files/raw?path=%00x"
check "raw get NUL in path: 400" test "$(status)" = 400
raw_put "path=m&mode=999" 'x'
check "raw put bad mode: 400" test "$(status)" = 400
truncate -s 17M "$WS/huge"
api GET "/v1/files/raw?path=huge"
check "raw get over 16 MiB: streamed whole (no cap since issue 15)" test "$(status)" = 200 -a "$(stat -c %s "$T/body")" = $((17 * 1024 * 1024))
head -c $((17 * 1024 * 1024)) /dev/zero >"$T/big"
raw_put "path=big" @"$T/big"
check "raw put over 16 MiB: streamed (cap is --max-upload)" test "$(status)" = 200 -a "$(stat -c %s "$WS/big")" = $((17 * 1024 * 1024))
head -c $((16 * 1024 * 1024)) /dev/zero >"$T/max"
raw_put "path=max" @"$T/max"
check "raw put of exactly 16 MiB: 200" test "$(status)" = 200 -a "$(stat -c %s "$WS/max")" = 16777216

# create over a directory, bad arguments.
fstatus "create over a directory: 422" 422 create '{"path":"a","file_text":"x"}'
fstatus "create empty path: 400" 400 create '{"path":"","file_text":"x"}'
fstatus "create without file_text: 400" 400 create '{"path":"x"}'
fstatus "unknown file op: 404" 404 frobnicate '{"path":"x"}'

# Atomicity: a reader never sees a partial file while it is rewritten.
python3 - "$WS/atomic.txt" <<'PY' &
import sys, time
p = sys.argv[1]
bad = 0
end = time.time() + 3
while time.time() < end:
    try:
        with open(p) as f:
            s = f.read()
    except FileNotFoundError:
        continue
    if s not in ("A" * 200000, "B" * 200000):
        bad += 1
print("partial reads:", bad)
sys.exit(1 if bad else 0)
PY
rpid=$!
printf '{"path":"atomic.txt","file_text":"%s"}' "$(head -c 200000 /dev/zero | tr '\0' A)" >"$T/wa"
printf '{"path":"atomic.txt","file_text":"%s"}' "$(head -c 200000 /dev/zero | tr '\0' B)" >"$T/wb"
for i in $(seq 30); do
	curl -s --unix-socket "$SOCK" --data-binary @"$T/wa" -o /dev/null http://a/v1/files/create
	curl -s --unix-socket "$SOCK" --data-binary @"$T/wb" -o /dev/null http://a/v1/files/create
done
check "atomic writes: readers see whole files only" wait $rpid

check "agent still alive" agent_alive
stop_agent TERM
