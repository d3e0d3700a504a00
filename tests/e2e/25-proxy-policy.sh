# 25-proxy-policy: per-session credential policies in the proxy (issue 16):
# the admin register op's "policy" (stored, bounded, shown in stats, read
# by addons as ctx.sandbox.policy), proxy.glob, and the shipped addons'
# enforcement with real git and curl: repository/project scope, push rules
# answered in git's report-status format, GraphQL mutations, and
# down-scoped, revoked GitHub App tokens.
. "$(dirname "$0")/../lib/common.sh"
. "$TOP/tests/lib/fakegit.sh"
. "$TOP/tests/lib/proxy.sh"
px_isolate "$@"

fx_all || { fail "fixtures start"; exit 1; }
fx_client_home

# jq-like helper: run python on the JSON read from stdin (d).
pyj() { "$PY" -c "import json,sys; d=json.load(sys.stdin); $1"; }

# ---- 1. the admin op: policy stored, bounded, shown; ctx.sandbox.policy ----
PX_ADDONS="[$FX/addons/policy_inspect.lua]" px_config px-inspect && px_start px-inspect ||
	{ fail "inspect proxy start"; exit 1; }
POL='{"github":{"repositories":["acme/app","acme/lib-*"],"permissions":{"contents":"write","pull_requests":"read"},"delete":false},"deep":{"a":{"b":7}}}'
check "register with a policy" px_admin "{\"op\":\"register\",\"id\":\"sb-i\",\"secret\":\"s-i\",\"policy\":$POL}"
check "stats show the policy as given" bash -c "px_admin() { $PY $FX/padmin.py $PX_ADMIN \"\$@\"; }; px_admin '{\"op\":\"stats\",\"id\":\"sb-i\"}' | $PY -c 'import json,sys; d=json.load(sys.stdin); assert d[\"sandboxes\"][0][\"policy\"]==json.loads(sys.argv[1]), d' '$POL'"
check "register without a policy" px_admin '{"op":"register","id":"sb-none","secret":"s-n"}'
check "stats: no policy member without a policy" bash -c "$PY $FX/padmin.py $PX_ADMIN '{\"op\":\"stats\",\"id\":\"sb-none\"}' | $PY -c 'import json,sys; d=json.load(sys.stdin); assert \"policy\" not in d[\"sandboxes\"][0], d'"
check "policy null means none" px_admin '{"op":"register","id":"sb-null","secret":"s-n","policy":null}'
bad_reg() {	# bad_reg WHAT JSON-POLICY EXPECTED-ERROR-SUBSTRING
	local out
	out=$(px_admin "{\"op\":\"register\",\"id\":\"sb-bad\",\"secret\":\"s-b\",\"policy\":$2}")
	case $out in *'"ok":false'*"$3"*) ok "register refuses $1";; *) fail "register refuses $1" "$out";; esac
}
bad_reg "a string policy" '"x"' "policy must be an object"
bad_reg "an array policy" '[1]' "policy must be an object"
bad_reg "a number policy" '5' "policy must be an object"
bad_reg "a policy 9 levels deep" '{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{}}}}}}}}}' "deeper than 8"
check "a policy 8 levels deep is taken" px_admin '{"op":"register","id":"sb-deep8","secret":"s","policy":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{}}}}}}}}}'
big=$("$PY" -c 'import json; print(json.dumps({"github":{"push":["refs/heads/"+"x"*190+str(i) for i in range(90)]}}))')
bad_reg "a policy over 16 KiB" "$big" "larger than 16384"
check "the refused sandbox was not registered" bash -c "! $PY $FX/padmin.py $PX_ADMIN '{\"op\":\"stats\",\"id\":\"sb-bad\"}'"

ins() { curl -s --proxy "http://$1@127.0.0.1:$PX_PORT" --cacert "$PX_CA" https://github.com/x; }
out=$(ins sb-i:s-i)
check "ctx.sandbox.policy: arrays (# and ipairs)" contains <(echo "$out") "n=2 repos=acme/app,acme/lib-*"
check "ctx.sandbox.policy: objects (pairs)" contains <(echo "$out") "perms=contents:write,pull_requests:read"
check "ctx.sandbox.policy: booleans and nesting" contains <(echo "$out") "delete=false deep=7"
check "ctx.sandbox.policy is read-only at every level" contains <(echo "$out") "writes=falsefalsefalse werr=read-only after=false"
check "proxy.glob: ** crosses /, * does not, ci folds case" contains <(echo "$out") "glob=true,false,true,false"
check "no policy: ctx.sandbox.policy is nil" contains <(ins sb-none:s-n) "policy=nil"
# Re-registering with another policy: new connections see the new one.
check "re-register with a narrower policy" px_admin '{"op":"register","id":"sb-i","secret":"s-i","policy":{"github":{"repositories":["acme/app"],"permissions":{}}}}'
check "the next connection sees the new policy" contains <(ins sb-i:s-i) "n=1 repos=acme/app perms= "
check "re-register without a policy drops it" px_admin '{"op":"register","id":"sb-i","secret":"s-i"}'
check "then ctx.sandbox.policy is nil" contains <(ins sb-i:s-i) "policy=nil"
kill "$PX_PID"

check "no sanitizer report from the proxy" px_san_clean
