# tests/lib/pxsolo.sh: one egress proxy from a script's own config, for the
# scripts that write their own yaml (26, r30-proxy-*, r30-presets). Source
# after tests/lib/common.sh.
#
#   px_solo [VAR=VALUE...]
#       starts $BIN/egress-proxy/egress-proxy -d -v -f $T/p.yaml (VARs in its
#       environment only: the secrets), its output in $T/stderr; waits for
#       127.0.0.1:$PP and the admin socket $T/admin.sock; sets PX_PID.
#       A proxy that does not come up fails the script there.
#   adm JSON   one admin call (tests/fixtures/padmin.py), the reply on stdout
px_solo() {
	env "$@" "$BIN/egress-proxy/egress-proxy" -d -v -f "$T/p.yaml" >>"$T/stderr" 2>&1 &
	PX_PID=$!
	track_pid $PX_PID
	wait_port "$PP" 20 && wait_for 10 test -S "$T/admin.sock" ||
		{ fail "proxy start" "$(tail -5 "$T/stderr")"; exit 1; }
}
adm() { "${PY:-/usr/bin/python3}" "$TOP/tests/fixtures/padmin.py" "$T/admin.sock" "$@"; }
