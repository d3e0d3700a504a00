#!/usr/bin/env bash
# tests/bench/proxy/run.sh: the egress proxy against its peers, in ONE run,
# through CONNECT against one local nginx TLS upstream (figures, not a gate):
#   direct            no proxy
#   egress intercept  this proxy, MITM + credential injected (shipped github.lua)
#   egress tunnel     this proxy, blind CONNECT tunnel
#   egress cred-add   this proxy, a named credential (issue 30) added in its
#                     bearer form (a registered sandbox, no Authorization sent)
#   egress cred-swap  the same, the client's placeholder swapped for it
#   egress cred-sigv4 a request signed with SigV4 placeholders signed again
#                     with the real key (header form, UNSIGNED-PAYLOAD)
#   squid tunnel      squid blind CONNECT (splice)
#   squid bump        squid-openssl ssl-bump + request_header_add (injection)
#   mitmproxy         mitmdump with an equivalent injecting addon
# Cases: keep-alive small GETs (req/s, p50, p99), a new connection per request
# (req/s), 1 MiB bodies (MiB/s), resident memory per idle connection with
# 2,000 open, measured 3 s after the last opened (500 for mitmproxy, which
# takes minutes to open 2,000). Each load line also gives the CPU microseconds
# per request of the client, the proxy (its process tree) and nginx; two tables
# turn the new-connection and 1 MiB ones into the rate the 2 cores bound, and
# the targets on those cases also print the ratio of the rows' bounds (the
# ceiling the machine sets on that ratio in this run). At the end,
# tls_floor.c prints what OpenSSL alone costs per intercepted connection.
# Knobs:
# BENCH_SECS (default 4), BENCH_IDLE (2000), BENCH_IDLE_MITM (500),
# BENCH_ROWS (words: direct egress squid mitm; default all of them),
# BENCH_CASES (words: idle keepalive newconn body; default all), BENCH_WORKERS
# (the egress proxy's workers; default 0: one per CPU),
# BENCH_PERF=1 (perf record -g of the egress proxy during each of its cases:
# $BENCH_OUT/perf-<row>-<case>.data, report in .txt), BENCH_OUT (kept files),
# BENCH_HEAPSITES=1 (the egress proxy runs under heapsites.so: its live heap
# per idle connection by library and by call stack, printed after the idle
# case; the idle KiB figure of those rows is then not valid, the tracker's
# own tables are resident too).
set -u
cd "$(dirname "$0")/../../.."
export TOP=$PWD
. tests/lib/common.sh
. tests/lib/fakegit.sh
. tests/lib/proxy.sh
SECS=${BENCH_SECS:-4}
IDLE=${BENCH_IDLE:-2000}
KA_C=${BENCH_KA_CONNS:-8}
NC_C=${BENCH_NC_CONNS:-8}
BODY_C=${BENCH_BODY_CONNS:-4}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
chmod 755 "$T"

echo "== proxy benchmark ($(date -u +%FT%TZ), $(nproc) CPUs, ${SECS}s per case, $IDLE idle connections)"
LOAD=$T/connect_load
cc -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -pthread tests/bench/proxy/connect_load.c \
	-o "$LOAD" -lssl -lcrypto || { echo "cannot build connect_load"; exit 1; }
fx_pki >/dev/null && fx_tokens || exit 1
# Upstream leaf for both the intercepted name and the tunnelled one.
(cd "$PKI" && openssl ecparam -name prime256v1 -genkey -noout -out bench.key &&
	openssl req -new -key bench.key -subj /CN=github.com -out bench.csr &&
	printf 'subjectAltName=DNS:github.com,DNS:bench.test\n' >bench.ext &&
	openssl x509 -req -in bench.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
		-sha256 -extfile bench.ext -out bench.pem) 2>/dev/null || exit 1

# --- upstream nginx (1 worker: the machine has few cores and the proxies need them)
NG=$(free_port)
mkdir -p "$T/ng/tmp" "$T/ng/www"
head -c 1048576 /dev/urandom >"$T/ng/www/1m"
cat >"$T/ng/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $T/ng/nginx.pid;
error_log $T/ng/error.log warn;
worker_rlimit_nofile 65536;
events { worker_connections 16384; }
http {
	access_log off;
	client_body_temp_path $T/ng/tmp/b; proxy_temp_path $T/ng/tmp/p; fastcgi_temp_path $T/ng/tmp/f;
	uwsgi_temp_path $T/ng/tmp/u; scgi_temp_path $T/ng/tmp/s;
	keepalive_requests 10000000; keepalive_timeout 600s;
	sendfile on;
	server {
		listen 127.0.0.1:$NG ssl;
		ssl_certificate $PKI/bench.pem; ssl_certificate_key $PKI/bench.key;
		location = /small { default_type text/plain; return 200 "ok\n"; }
		location = /1m { root $T/ng/www; }
	}
}
EOF
nginx -p "$T/ng" -c "$T/ng/nginx.conf" -g 'daemon off;' >"$T/ng/stderr" 2>&1 &
NG_PID=$!
track_pid $NG_PID
wait_port "$NG" 20 || { echo "nginx did not start"; cat "$T/ng/stderr"; exit 1; }

# rss_tree PID: resident KiB of PID and all its descendants.
rss_tree() {
	local p kids sum=0
	for p in $1 $(pgrep -P "$1" 2>/dev/null); do
		[ "$p" = "$1" ] || { sum=$((sum + $(rss_tree "$p"))); continue; }
		sum=$((sum + $(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
	done
	echo "$sum"
}

# cpu_tree PID: CPU ticks (utime + stime, all threads) of PID and its descendants.
cpu_tree() {
	local p sum=0
	[ "$1" = - ] && { echo 0; return; }
	sum=$(awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0)
	for p in $(pgrep -P "$1" 2>/dev/null); do
		sum=$((sum + $(cpu_tree "$p")))
	done
	echo "$sum"
}

# run_case ROW CASE PID LOADARGS...: one load run; prints the load generator's
# line plus the CPU microseconds per request of the proxy (its whole process
# tree) and of nginx, next to the client's own (client_cpu_us).
run_case() {
	local row=$1 case=$2 pid=$3 out p0 p1 n0 n1 reqs hz
	shift 3
	hz=$(getconf CLK_TCK)
	perf_on "$row" "$case" "$pid"
	p0=$(cpu_tree "$pid"); n0=$(cpu_tree "$NG_PID")
	out=$("$LOAD" "$@" 2>&1)
	p1=$(cpu_tree "$pid"); n1=$(cpu_tree "$NG_PID")
	perf_off
	reqs=$(sed -n 's/.* reqs=\([0-9]*\).*/\1/p' <<<"$out")
	if [ "${reqs:-0}" -gt 0 ]; then
		out="$out $(awk -v p=$((p1 - p0)) -v n=$((n1 - n0)) -v r="$reqs" -v hz="$hz" \
			'BEGIN { printf "proxy_cpu_us=%.0f nginx_cpu_us=%.0f", p * 1e6 / hz / r, n * 1e6 / hz / r }')"
	fi
	echo "$out"
}

# settle PID: waits (up to 60 s) until PID's tree uses < 5% of a CPU, so one
# phase's teardown does not bleed into the next measurement.
settle() {
	local i t0 t1
	for i in $(seq 120); do
		t0=$(awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0)
		sleep 0.5
		t1=$(awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0)
		[ $((t1 - t0)) -le 2 ] && return 0
	done
	return 0
}

ROWSEL=${BENCH_ROWS:-direct egress squid mitm}
CASES=${BENCH_CASES:-idle keepalive newconn body}
OUTD=${BENCH_OUT:-$T/out}
mkdir -p "$OUTD"
want_row() { case " $ROWSEL " in *" $1 "*) return 0 ;; esac; return 1; }
want_case() { case " $CASES " in *" $1 "*) return 0 ;; esac; return 1; }
PERF_PID=
# perf_on ROW CASE PID / perf_off: a perf record -g of PID during one case.
perf_on() {
	[ "${BENCH_PERF:-0}" = 1 ] && [ "$3" != - ] && command -v perf >/dev/null || return 0
	case "$1" in egress*) ;; *) return 0 ;; esac
	PERF_NAME=$OUTD/perf-$1-$2
	perf record -q -g -p "$3" -o "$PERF_NAME.data" >/dev/null 2>&1 &
	PERF_PID=$!
	sleep 0.3
}
perf_off() {
	[ -n "$PERF_PID" ] || return 0
	kill -INT "$PERF_PID" 2>/dev/null; wait "$PERF_PID" 2>/dev/null
	perf report -i "$PERF_NAME.data" --no-children --sort dso,symbol --stdio 2>/dev/null | head -80 >"$PERF_NAME.txt"
	PERF_PID=
}
declare -A KA_RPS=() KA_P50=() KA_P99=() NC_RPS=() NC_CPU=() BODY_MB=() BODY_CPU=() IDLE_KIB=() NOTE=()
declare -A NC_BOUND=() BODY_BOUND=()
ROWS=()

# heapsites_report ROW N: with BENCH_HEAPSITES=1, the egress proxy's live
# heap divided by the N idle connections: by library (lua if Lua allocated
# it, else the first frame outside libc and libcrypto) and the largest call
# stacks.
heapsites_report() {
	local row=$1 n=$2 f
	[ "${BENCH_HEAPSITES:-0}" = 1 ] && [ "${row#egress}" != "$row" ] || return 0
	f=$T/hs-$row
	touch "$f.trigger"
	wait_for 30 test -s "$f.0" && sleep 1 || { echo "  heapsites: no dump"; return 0; }
	awk -v n="$n" '{
		c = "other"
		for (i = 3; i <= NF; i++)
			if ($i ~ /^liblua/) c = "lua"
		for (i = 3; i <= NF && c == "other"; i++) {
			if ($i ~ /^(libcrypto|libc\.)/) continue
			if ($i ~ /^libssl/) c = "openssl"
			else if ($i ~ /^libevent/) c = "libevent"
			else if ($i ~ /^egress-proxy/) c = "proxy"
			else c = $i
		}
		if (c == "other" && $3 ~ /^libcrypto/) c = "openssl"
		b[c] += $1; k[c] += $2; tb += $1; tk += $2
	} END {
		printf "  heapsites: live heap per idle connection %.0f bytes in %.1f blocks:", tb / n, tk / n
		for (c in b) printf " %s %.0f B/%.1f", c, b[c] / n, k[c] / n
		printf "\n"
	}' "$f.0"
	sort -rn "$f.0" | head -8 | awk -v n="$n" '{ printf "    %7.0f B %5.2f blocks ", $1 / n, $2 / n
		for (i = 3; i <= NF && i < 9; i++) printf " %s", $i; printf "\n" }'
}

# measure ROW PID LOADARGS...: runs the cases for one configuration.
measure() {
	local row=$1 pid=$2; shift 2
	local out idle=$IDLE
	ROWS+=("$row")
	[ "$row" = mitmproxy ] && idle=${BENCH_IDLE_MITM:-500}
	if [ "$pid" != - ] && [ "$idle" -gt 0 ] && want_case idle; then
		local w=$T/idle-$row r0 r1 lp
		rm -f "$w"
		sleep 3	# the baseline after housekeeping too (an earlier phase's heap trimmed)
		r0=$(rss_tree "$pid")
		"$LOAD" "$@" -m idle -N "$idle" -c 16 -p /small -w "$w" >"$w.out" 2>&1 &
		lp=$!
		if wait_for 240 grep -q '^idle ready' "$w.out"; then
			sleep 3	# steady state: idle timers and housekeeping have run
			r1=$(rss_tree "$pid")
			local held
			held=$(awk '/^idle ready/ {print $3}' "$w.out")
			if [ "${held:-0}" -gt 0 ]; then
				IDLE_KIB[$row]=$(awk -v a="$r0" -v b="$r1" -v n="$held" 'BEGIN {printf "%.1f", (b - a) / n}')
			fi
			echo "  $row idle:      $(cat "$w.out") rss ${r0} -> ${r1} KiB"
			heapsites_report "$row" "$held"
			[ "$held" = "$idle" ] || NOTE[$row]="only $held of $idle idle connections opened"
			[ "$idle" = "$IDLE" ] || NOTE[$row]="idle memory measured with $idle connections (opening $IDLE takes minutes)"
		else
			echo "  $row idle:      did not finish: $(cat "$w.out")"
			NOTE[$row]="idle connections did not open in time"
		fi
		touch "$w"
		wait "$lp" 2>/dev/null
		settle "$pid"
	fi
	if want_case keepalive; then
		out=$(run_case "$row" keepalive "$pid" "$@" -m keepalive -c "$KA_C" -d "$SECS" -p /small)
		echo "  $row keepalive: $out"
		KA_RPS[$row]=$(sed -n 's/.* rps=\([0-9]*\).*/\1/p' <<<"$out")
		KA_P50[$row]=$(sed -n 's/.* p50_us=\([0-9]*\).*/\1/p' <<<"$out")
		KA_P99[$row]=$(sed -n 's/.* p99_us=\([0-9]*\).*/\1/p' <<<"$out")
	fi
	if want_case newconn; then
		out=$(run_case "$row" newconn "$pid" "$@" -m newconn -c "$NC_C" -d "$SECS" -p /small)
		echo "  $row newconn:   $out"
		NC_RPS[$row]=$(sed -n 's/.* rps=\([0-9]*\).*/\1/p' <<<"$out")
		NC_CPU[$row]=$(sed -n 's/.* client_cpu_us=\([0-9]*\) proxy_cpu_us=\([0-9]*\) nginx_cpu_us=\([0-9]*\).*/\1 \2 \3/p' <<<"$out")
	fi
	if want_case body; then
		out=$(run_case "$row" body "$pid" "$@" -m body -c "$BODY_C" -d "$SECS" -p /1m)
		echo "  $row body:      $out"
		BODY_MB[$row]=$(sed -n 's/.* mbps=\([0-9.]*\).*/\1/p' <<<"$out")
		BODY_CPU[$row]=$(sed -n 's/.* client_cpu_us=\([0-9]*\) proxy_cpu_us=\([0-9]*\) nginx_cpu_us=\([0-9]*\).*/\1 \2 \3/p' <<<"$out")
	fi
}

# --- direct
if want_row direct; then
	echo "-- direct"
	measure direct - -t "127.0.0.1:$NG" -n github.com -C "$PKI/ca.pem"
fi

# --- this proxy
if ! want_row egress; then
	:
elif [ -x "$PROXY_BIN" ] && [ -f "$TOP/addons/github.lua" ]; then
	API_PORT=1 GH_PORT=1 GL_PORT=1
	PX_NORESOLVE=1 PX_ANON=true PX_RESOLVE="  \"github.com:443\": \"127.0.0.1:$NG\"
  \"bench.test:443\": \"127.0.0.1:$NG\"" PX_EXTRA="limits:
  tunnels_per_sandbox: 100000
  conns_per_sandbox: 100000
timeouts:
  idle: 10m" px_config egress
	sed -i "s/^workers: .*/workers: ${BENCH_WORKERS:-0}/" "$PX_DIR/proxy.yaml"
	PX_ADMIN=$PX_DIR/admin.sock PX_CA=$PX_DIR/export/ca.crt
	# A fresh proxy process per row: the idle-memory delta of the second
	# row would otherwise be taken on a heap the first row left free.
	HS_ENV=()
	if [ "${BENCH_HEAPSITES:-0}" = 1 ]; then
		cc -O2 -g -std=c11 -Wall -Wextra -fPIC -shared -pthread tests/bench/proxy/heapsites.c \
			-o "$T/heapsites.so" -ldl || { echo "cannot build heapsites.so"; exit 1; }
	fi
	px_bench_start() { # row [config]
		[ "${BENCH_HEAPSITES:-0}" = 1 ] && HS_ENV=(env LD_PRELOAD="$T/heapsites.so" HEAPSITES_OUT="$T/hs-$1")
		"${HS_ENV[@]}" "$PROXY_BIN" -f "${2:-$PX_DIR/proxy.yaml}" >>"$PX_DIR/stderr" 2>&1 &
		PX_PID=$!
		track_pid $PX_PID
		wait_port "$PX_PORT" 20 && wait_for 10 test -s "$PX_CA" && return 0
		echo "egress-proxy did not start: $(tail -3 "$PX_DIR/stderr")"
		kill "$PX_PID" 2>/dev/null
		return 1
	}
	px_bench_stop() {
		kill "$PX_PID" 2>/dev/null
		wait "$PX_PID" 2>/dev/null
		wait_for 10 sh -c "! (exec 3<>/dev/tcp/127.0.0.1/$PX_PORT) 2>/dev/null"
	}
	if px_bench_start egress-intercept; then
		echo "-- egress intercept"
		measure "egress-intercept" "$PX_PID" -x "127.0.0.1:$PX_PORT" -t github.com:443 -n github.com -C "$PX_CA"
		px_admin '{"op":"metrics"}' | "$PY" -c 'import json, sys
print("\n".join("  " + l for l in json.load(sys.stdin)["text"].splitlines() if l.startswith(("egress_proxy_upstream_pool", "egress_proxy_connections_asleep"))))' 2>/dev/null
		grep -q '"injected":true' "$PX_DIR/audit.jsonl" 2>/dev/null ||
			NOTE[egress-intercept]="no injected request in the audit log: check the addon"
		px_bench_stop
	fi
	if px_bench_start egress-tunnel; then
		echo "-- egress tunnel"
		measure "egress-tunnel" "$PX_PID" -x "127.0.0.1:$PX_PORT" -t bench.test:443 -n bench.test -C "$PKI/ca.pem"
		px_bench_stop
	fi
	# Named credentials (issue 30): bench.test gets a bearer credential a
	# registered sandbox may use; the same proxy otherwise.
	printf 'return { name = "benchcred", credentials = { { name = "bench", form = "bearer",\n  secret = "file:%s", hosts = { "bench.test" }, default = true },\n  { name = "benchs3", form = "sigv4", key_id = "file:%s", secret = "file:%s", hosts = { "bench.test" } } } }\n' \
		"$T/bench.cred" "$T/bench.akid" "$T/bench.cred" >"$T/benchcred.lua"
	printf 'bench-REAL-token-%s\n' "$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" >"$T/bench.cred"
	printf 'AKIABENCH0000000001\n' >"$T/bench.akid"
	sed "s|^addons: \[\(.*\)\]|addons: [\1, $T/benchcred.lua]|" "$PX_DIR/proxy.yaml" >"$PX_DIR/proxy-cred.yaml"
	CRED_AUTH=$(printf 'bench:bench-secret' | base64 -w0)
	for row in cred-add cred-swap cred-sigv4; do
		px_bench_start "egress-$row" "$PX_DIR/proxy-cred.yaml" || continue
		ph=$(px_admin '{"op":"register","id":"bench","secret":"bench-secret"}' |
			"$PY" -c 'import json,sys; print(json.load(sys.stdin)["credentials"]["bench"]["placeholder"])')
		hdr=()
		auth=$CRED_AUTH
		[ "$row" = cred-swap ] && hdr=(-A "Authorization: Bearer $ph")
		if [ "$row" = cred-sigv4 ]; then
			# signed by the "client" with the placeholders once: the proxy
			# signs every request again (it never checks the client's)
			kid=$(px_admin '{"op":"register","id":"bench-s","secret":"bench-secret","policy":{"credentials":["benchs3"]}}' |
				"$PY" -c 'import json,sys; print(json.load(sys.stdin)["credentials"]["benchs3"]["key_id"])')
			day=$(date -u +%Y%m%d)
			hdr=(-A "Authorization: AWS4-HMAC-SHA256 Credential=$kid/$day/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=$(printf '0%.0s' $(seq 64))"
				-A "x-amz-date: ${day}T000000Z" -A "x-amz-content-sha256: UNSIGNED-PAYLOAD")
			auth=$(printf 'bench-s:bench-secret' | base64 -w0)
		fi
		echo "-- egress $row"
		measure "egress-$row" "$PX_PID" -x "127.0.0.1:$PX_PORT" -U "$auth" -t bench.test:443 \
			-n bench.test -C "$PX_CA" "${hdr[@]}"
		want=bench:bearer
		[ "$row" = cred-swap ] && want=bench:swap
		[ "$row" = cred-sigv4 ] && want=benchs3:sigv4
		grep -q "\"credentials\":\"$want\"" "$PX_DIR/audit.jsonl" 2>/dev/null ||
			NOTE[egress-$row]="no request with credentials $want in the audit log"
		px_bench_stop
	done
else
	echo "-- egress-proxy not built ($PROXY_BIN) or addons/github.lua missing: rows skipped"
fi

# --- squid (squid-openssl): blind tunnel and ssl-bump
printf '127.0.0.1 github.com bench.test\n' >"$T/hosts"
squid_start() { # name port extra-config
	local d=$T/$1
	mkdir -p "$d"
	SQ_PORT=$2
	cat >"$d/squid.conf" <<EOF
$3
http_access allow all
cache deny all
hosts_file $T/hosts
dns_nameservers 127.0.0.1
pid_filename $d/squid.pid
cache_log $d/cache.log
access_log none
cache_store_log none
coredump_dir $d
cache_effective_user proxy
max_filedescriptors 65536
shutdown_lifetime 1 seconds
client_persistent_connections on
server_persistent_connections on
EOF
	chown -R proxy "$d"
	squid -N -f "$d/squid.conf" >"$d/stderr" 2>&1 &
	SQ_PID=$!
	track_pid $SQ_PID
	wait_port "$SQ_PORT" 30
}
if want_row squid && command -v squid >/dev/null; then
	echo "-- squid tunnel"
	p=$(free_port)
	if squid_start squid-tunnel "$p" "http_port 127.0.0.1:$p"; then
		measure "squid-tunnel" "$SQ_PID" -x "127.0.0.1:$SQ_PORT" -t "bench.test:$NG" -n bench.test -H "bench.test:$NG" -C "$PKI/ca.pem"
		kill "$SQ_PID"; wait "$SQ_PID" 2>/dev/null
	else
		echo "squid did not start: $(tail -3 "$T/squid-tunnel/cache.log")"
	fi
	echo "-- squid ssl-bump"
	mkdir -p "$T/squid-bump"
	openssl ecparam -name prime256v1 -genkey -noout -out "$T/squid-bump/ca.key" 2>/dev/null
	openssl req -x509 -new -key "$T/squid-bump/ca.key" -days 2 -subj "/CN=bench squid CA" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
		-out "$T/squid-bump/ca.pem" 2>/dev/null
	/usr/lib/squid/security_file_certgen -c -s "$T/squid-bump/ssl_db" -M 16MB >/dev/null 2>&1
	SQ_PORT=$(free_port)
	conf="http_port 127.0.0.1:$SQ_PORT ssl-bump tls-cert=$T/squid-bump/ca.pem tls-key=$T/squid-bump/ca.key generate-host-certificates=on dynamic_cert_mem_cache_size=16MB
sslcrtd_program /usr/lib/squid/security_file_certgen -s $T/squid-bump/ssl_db -M 16MB
sslcrtd_children 4 startup=1 idle=1
ssl_bump bump all
tls_outgoing_options cafile=$PKI/ca.pem
request_header_access Authorization deny all
request_header_add Authorization \"token bench-token\" all"
	if squid_start squid-bump "$SQ_PORT" "$conf"; then
		measure "squid-bump" "$SQ_PID" -x "127.0.0.1:$SQ_PORT" -t "github.com:$NG" -n github.com -H "github.com:$NG" -C "$T/squid-bump/ca.pem"
		kill "$SQ_PID"; wait "$SQ_PID" 2>/dev/null
	else
		echo "squid ssl-bump did not start: $(tail -5 "$T/squid-bump/cache.log")"
	fi
fi

# --- mitmproxy (mitmdump) with an injecting addon
if want_row mitm && command -v mitmdump >/dev/null; then
	echo "-- mitmproxy"
	MP=$(free_port)
	mkdir -p "$T/mitm"
	cat >"$T/mitm/inject.py" <<'EOF'
def request(flow):
    if flow.request.pretty_host == "github.com":
        flow.request.headers.pop("Authorization", None)
        flow.request.headers["Authorization"] = "token bench-token"
EOF
	mitmdump --listen-host 127.0.0.1 -p "$MP" -q --set confdir="$T/mitm" \
		--set ssl_verify_upstream_trusted_ca="$PKI/ca.pem" --set connection_strategy=lazy \
		-s "$T/mitm/inject.py" >"$T/mitm/stderr" 2>&1 &
	MP_PID=$!
	track_pid $MP_PID
	if wait_port "$MP" 60 && wait_for 20 test -s "$T/mitm/mitmproxy-ca-cert.pem"; then
		measure "mitmproxy" "$MP_PID" -x "127.0.0.1:$MP" -t "127.0.0.1:$NG" -n github.com -C "$T/mitm/mitmproxy-ca-cert.pem"
	else
		echo "mitmdump did not start: $(tail -3 "$T/mitm/stderr")"
	fi
	kill "$MP_PID" 2>/dev/null
fi

# --- table
v() { local x; eval "x=\${$1[$2]:-}"; echo "${x:--}"; }
echo
printf '%-17s %10s %9s %9s %12s %12s %14s\n' config "ka req/s" "ka p50us" "ka p99us" "newconn r/s" "1MiB MiB/s" "idle KiB/conn"
for r in "${ROWS[@]}"; do
	printf '%-17s %10s %9s %9s %12s %12s %14s\n' "$r" "$(v KA_RPS "$r")" "$(v KA_P50 "$r")" \
		"$(v KA_P99 "$r")" "$(v NC_RPS "$r")" "$(v BODY_MB "$r")" "$(v IDLE_KIB "$r")"
done
for r in "${ROWS[@]}"; do
	[ -n "${NOTE[$r]:-}" ] && echo "note: $r: ${NOTE[$r]}"
done
# cpu_table TITLE UNIT CPU-ARRAY BOUND-ARRAY: where a case's CPU goes per
# request (2 cores shared by the client, the proxy and nginx): the rate is
# bounded by 2 s / (client + proxy + nginx) per second; the bounds are kept.
cpu_table() {
	local title=$1 unit=$2 arr=$3 bnd=$4 r cc pc nc t b
	eval "[ \${#$arr[@]} -gt 0 ]" || return 0
	echo
	printf '%-17s %14s %14s %14s %14s\n' "$title" "client us/req" "proxy us/req" "nginx us/req" "bound $unit"
	for r in "${ROWS[@]}"; do
		t=$(v "$arr" "$r")
		[ "$t" != - ] || continue
		read -r cc pc nc <<<"$t"
		b=$(awk -v t=$((cc + pc + nc)) -v n="$(nproc)" 'BEGIN { if (t > 0) printf "%.0f", n * 1e6 / t; else print "-" }')
		eval "$bnd[\$r]=\$b"
		printf '%-17s %14s %14s %14s %14s\n' "$r" "$cc" "$pc" "$nc" "$b"
	done
}
cpu_table "new conn, CPU" "req/s" NC_CPU NC_BOUND
cpu_table "1 MiB body, CPU" "MiB/s" BODY_CPU BODY_BOUND

# ratio NAME A-ROW A-ARRAY OP TARGET B-ROW B-ARRAY: prints "ratio = A/B vs target".
echo
echo "targets (issue 2), ratios from this run:"
target() { # label array rowA rowB min-ratio   (A/B >= min)   or  max: prefix for <=
	local label=$1 arr=$2 a b cmp=${6:-ge}
	a=$(v "$arr" "$3"); b=$(v "$arr" "$4")
	if [ "$a" = - ] || [ "$b" = - ] || [ "$b" = 0 ]; then
		printf '  %-58s  n/a\n' "$label"; return
	fi
	awk -v a="$a" -v b="$b" -v t="$5" -v l="$label" -v c="$cmp" 'BEGIN {
		r = a / b; ok = (c == "ge") ? (r >= t) : (r <= t)
		printf "  %-58s %7.2f  (target %s %s)  %s\n", l, r, (c == "ge" ? ">=" : "<="), t, ok ? "MET" : "MISSED" }'
}
# ceiling BOUND-ARRAY ROW-A ROW-B: the same ratio of the two rows' CPU bounds
# (what the two cores allow each row in this run, from the tables above).
ceiling() {
	local a b
	a=$(v "$1" "$2"); b=$(v "$1" "$3")
	[ "$a" != - ] && [ "$b" != - ] && [ "$b" != 0 ] || return 0
	awk -v a="$a" -v b="$b" 'BEGIN { printf "  %-58s %7.2f  (%s / %s)\n", "  ... ratio of the two rows'"'"' CPU bounds in this run", a / b, a, b }'
}
limit() { # label array row max
	local a; a=$(v "$2" "$3")
	if [ "$a" = - ]; then printf '  %-58s  n/a\n' "$1"; return; fi
	awk -v a="$a" -v t="$4" -v l="$1" 'BEGIN { printf "  %-58s %7.1f  (target <= %s)  %s\n", l, a, t, a <= t ? "MET" : "MISSED" }'
}
target "keep-alive req/s: intercept / squid tunnel" KA_RPS egress-intercept squid-tunnel 0.5
target "keep-alive req/s: intercept / squid ssl-bump" KA_RPS egress-intercept squid-bump 2
target "keep-alive req/s: intercept / mitmproxy" KA_RPS egress-intercept mitmproxy 20
target "keep-alive p99: intercept / squid tunnel" KA_P99 egress-intercept squid-tunnel 2 le
target "new conn req/s: intercept / direct" NC_RPS egress-intercept direct 0.5
target "new conn req/s: intercept / squid ssl-bump" NC_RPS egress-intercept squid-bump 2
ceiling NC_BOUND egress-intercept squid-bump
target "1 MiB bodies MiB/s: intercept / direct" BODY_MB egress-intercept direct 0.6
ceiling BODY_BOUND egress-intercept direct
target "keep-alive req/s: named credential added / addon injection" KA_RPS egress-cred-add egress-intercept 0.95
target "keep-alive req/s: placeholder swap / credential added" KA_RPS egress-cred-swap egress-cred-add 0.95
target "keep-alive req/s: SigV4 signed again / bearer added" KA_RPS egress-cred-sigv4 egress-cred-add 0.9
limit "idle KiB per intercepted connection" IDLE_KIB egress-intercept 16
limit "idle KiB per tunnelled connection" IDLE_KIB egress-tunnel 8
# What OpenSSL alone costs per intercepted client connection here (no proxy,
# no libevent, no network): the floor under the idle-memory and new-connection
# figures above.
if cc -O2 -g -std=c11 -Wall -Wextra tests/bench/proxy/tls_floor.c -o "$T/tls_floor" -lssl -lcrypto 2>/dev/null &&
	fl=$("$T/tls_floor" -n 1000 2>&1); then
	awk -v l="$fl" 'BEGIN { split(l, f, /[ =]/); for (i = 2; i < length(f); i += 2) v[f[i]] = f[i + 1]
		printf "OpenSSL alone, per server-side TLS 1.3 connection (tests/bench/proxy/tls_floor.c):\n"
		printf "  heap kept after a request: %.1f KiB in %.0f allocations (%.1f KiB with malloc headers)\n",
			v["heap_bytes"] / 1024, v["allocs"], (v["heap_bytes"] + 8 * v["allocs"]) / 1024
		printf "  server CPU per full handshake (SSL_new to SSL_free): %s us\n", v["hs_cpu_us"] }'
fi
echo "(informational: egress tunnel / squid tunnel keep-alive $(awk -v a="$(v KA_RPS egress-tunnel)" -v b="$(v KA_RPS squid-tunnel)" 'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.2f", a / b; else print "n/a" }'))"
exit 0
