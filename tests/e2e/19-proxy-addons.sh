# 19-proxy-addons: addon faults fail closed and reloads keep the old addons
# when the new ones do not load. Asserted on what the upstreams received.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"

fx_pki && fx_tokens && fx_repos || { fail "fixtures"; exit 1; }
GH_TOKEN2=ghp_e2eSECOND$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
fx_api_start --gh-token "$GH_TOKEN2" && fx_nginx_start || { fail "fixtures start"; exit 1; }
fx_recorder evil --cert "$PKI/evil.test.pem" --key "$PKI/evil.test.key"
A=$T/addons; mkdir -p "$A"
printf '%s' "$GH_TOKEN2" >"$T/secrets2"; chmod 600 "$T/secrets2"
cat >"$A/deny.lua" <<'LUA'
return { name = "deny-evil", on_connect = function(ctx)
	if ctx.host == "evil.test" then return "deny", "evil.test is not reachable from sandboxes", 403 end
end }
LUA
# Injects a real token, THEN raises: the injected header must not leave.
cat >"$A/boom.lua" <<'LUA'
local M = { name = "boom" }
function M.on_connect(ctx) if ctx.host == "uploads.github.com" then return "intercept" end end
function M.on_request(req, ctx)
	req:inject("Authorization", "token " .. assert(proxy.secret(proxy.config.github_token)), "boom")
	error("boom after inject")
end
return M
LUA
cat >"$A/loop.lua" <<'LUA'
local M = { name = "loop" }
function M.on_connect(ctx) if ctx.host == "codeload.github.com" then return "intercept" end end
function M.on_request(req, ctx)
	req:inject("Authorization", "token " .. assert(proxy.secret(proxy.config.github_token)), "loop")
	local x = 0
	while true do x = x + 1 end
end
return M
LUA
cat >"$A/connerr.lua" <<'LUA'
return { name = "connerr", on_connect = function(ctx)
	if ctx.host == "raw.githubusercontent.com" then error("on_connect boom") end
end }
LUA
cp "$FX/addons/inject.lua" "$A/main.lua"
PX_ADDONS="[$A/deny.lua, $A/boom.lua, $A/loop.lua, $A/connerr.lua, $A/main.lua]" \
PX_RESOLVE="  \"evil.test:443\": \"127.0.0.1:$REC_PORT\"" PX_ADDON_CONFIG="  github_token2: file:$T/secrets2" \
PX_EXTRA="limits:
  lua_instructions: 100000" px_config && px_start && px_sandbox || { fail "proxy start"; exit 1; }
ok "proxy start"
R=$T/r; mkdir -p "$R"
check "-n accepts the config and addons" "$PROXY_BIN" -n -f "$PX_DIR/proxy.yaml"

get() { # name host path
	pci "$2" "GET $3 HTTP/1.1\r\nHost: $2\r\nConnection: close\r\n\r\n" --responses 1 >"$R/$1" 2>&1
}
get ok1 api.github.com /user
check "baseline: injected token works" grep -q e2e-octocat "$R/ok1"

# deny decision: status and reason the client can read, nothing dialled
pc --connect evil.test:443 --wait 5 >"$R/deny" 2>&1
check "deny: 403 on the CONNECT" grep -q '^connect: HTTP/1.[01] 403' "$R/deny"
check "deny: reason readable" grep -q "evil.test is not reachable from sandboxes" "$R/deny"
check "deny: nothing dialled" rec_noconn evil

n_nginx=$(wc -l <"$T/nginx/access.log")
n_api=$(wc -l <"$T/api.log")
# on_request raises after injecting
get boom uploads.github.com /o/r/file
check "addon error: request refused (502)" st_in "$R/boom" 502
# runaway hook: instruction budget
t0=$(date +%s)
get loop codeload.github.com /o/r/tar
check "instruction budget: request refused (502)" st_in "$R/loop" 502
check "instruction budget: refused promptly ($(( $(date +%s) - t0 )) s)" test $(( $(date +%s) - t0 )) -lt 15
# on_connect raises
pc --connect raw.githubusercontent.com:443 --wait 5 >"$R/connerr" 2>&1
check "on_connect error: CONNECT refused" bash -c "grep -q '^connect: HTTP/1.[01] [45][0-9][0-9]' $R/connerr"
check "failed hooks forwarded nothing to the git hosts" test "$(wc -l <"$T/nginx/access.log")" = "$n_nginx"
check "failed hooks forwarded nothing to the API/auth backend" test "$(wc -l <"$T/api.log")" = "$n_api"
check "addon errors logged with the addon's message" grep -q "boom after inject" "$PX_DIR/proxy.log"
check "addon errors counted" bash -c "$PY $FX/padmin.py $PX_ADMIN '{\"op\":\"metrics\"}' | grep -q 'egress_proxy_addon_errors_total [1-9]'"
check "no token in the proxy log" bash -c "! grep -qF -- '$GH_TOKEN_REAL' $PX_DIR/proxy.log $PX_DIR/stderr"
get ok2 api.github.com /user
check "other hosts unaffected by failing addons" grep -q e2e-octocat "$R/ok2"

# Reload with a syntax error: old addons keep working (file watch and SIGHUP).
printf 'local M = { name = "broken"\nfunction M.on_connect(ctx return "intercept" end\n' >"$A/main.lua.new"
mv "$A/main.lua.new" "$A/main.lua"
kill -HUP "$PX_PID"
check "reload failure logged" wait_for 10 grep -q "reload failed" "$PX_DIR/proxy.log"
check "admin reload reports the load error" bash -c "! $PY $FX/padmin.py $PX_ADMIN '{\"op\":\"reload\"}' >$R/reload-bad 2>&1 && grep -q main.lua $R/reload-bad"
check "-n rejects the broken addon" bash -c "! $PROXY_BIN -n -f $PX_DIR/proxy.yaml >$R/n-bad 2>&1 && grep -q main.lua $R/n-bad"
n_ok=$(fx_api_q "r['path']=='/user' and h.get('authorization')==['token $GH_TOKEN_REAL']")
get ok3 api.github.com /user
check "after a failed reload the old addon still injects" grep -q e2e-octocat "$R/ok3"
check "...with the old token" test "$(fx_api_q "r['path']=='/user' and h.get('authorization')==['token $GH_TOKEN_REAL']")" = $((n_ok + 1))
check "proxy alive after failed reload" px_alive

# A valid new version is picked up (proves reloads happen at all).
sed 's/proxy.config.github_token)/proxy.config.github_token2)/' "$FX/addons/inject.lua" >"$A/main.lua.new"
mv "$A/main.lua.new" "$A/main.lua"
kill -HUP "$PX_PID"
check "valid reload logged" wait_for 10 grep -q "addons reloaded" "$PX_DIR/proxy.log"
check "new addon injects the second token" wait_for 10 bash -c "$PY $FX/pclient.py --proxy 127.0.0.1:$PX_PORT --proxy-auth sb-e2e:$SECRET --cafile $PX_CA --connect api.github.com:443 --tls --sni api.github.com --send 'GET /user?m=second HTTP/1.1\r\nHost: api.github.com\r\nConnection: close\r\n\r\n' --responses 1 | grep -q e2e-octocat && grep -q 'token $GH_TOKEN2' $T/api.log"
check "the first token is no longer injected after reload" test "$(fx_api_q "'m=second' in r['path'] and h.get('authorization')!=['token $GH_TOKEN2']")" = 0
check "no sanitizer report from the proxy" px_san_clean
