# tests/lib/fakegit.sh: fake github.com / gitlab.com / api.github.com and a
# recording attacker, all on 127.0.0.1, for the proxy e2e tests. Source after
# tests/lib/common.sh. Every key and token is generated into $T per run.
#
#   fx_pki               $T/pki: test CA, leaves, bad certs, app key (mkpki.sh)
#   fx_tokens            GH_TOKEN_REAL, GL_TOKEN_REAL, APP_ID, APP_INST
#   fx_repos             bare repos github: e2e-org/repo.git, gitlab: e2e-group/repo.git
#   fx_api_start [args]  fakeapi.py: API_PORT (TLS, api.github.com), API_PLAIN (auth backend)
#                        log: $T/api.log (one JSON line per request)
#   fx_nginx_start       nginx+fcgiwrap: GH_PORT (github.com & friends), GL_PORT (gitlab.com),
#                        SINK_PORT (plain HTTP: / and /big/256m.bin)
#                        log: $T/nginx/access.log
#   fx_recorder NAME [--cert C --key K] [--reply R]
#                        recording attacker; sets REC_PORT; bytes in $T/rec-NAME.bytes,
#                        events in $T/rec-NAME.events
#   fx_all               all of the above
#   fx_client_home       $T/home: a clean HOME for git/curl/gh; exports HOME, GIT_* vars
#   fx_no_token_in_client  asserts no real token in the client env or HOME
FX=$TOP/tests/fixtures
# Debian python3 (has python3-cryptography; avoids slow version-manager shims)
PY=${PY:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3

fx_pki() {
	[ -f "$T/pki/ca.pem" ] || bash "$FX/mkpki.sh" "$T/pki" || { echo "mkpki failed" >&2; return 1; }
	PKI=$T/pki
}

fx_tokens() {
	GH_TOKEN_REAL=ghp_e2eREAL$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	GL_TOKEN_REAL=glpat-e2eREAL$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
	APP_ID=424242
	APP_INST=5151
}

# fx_bare DIR: a bare repo at DIR with one commit on main, pushes allowed.
fx_bare() {
	local d=$1 w
	w=$(mktemp -d "$T/seed.XXXX")
	git init -q -b main "$w"
	echo "hello from $(basename "$(dirname "$d")")/$(basename "$d")" >"$w/README"
	git -C "$w" add README
	git -C "$w" -c user.name=seed -c user.email=seed@e2e.test commit -q -m seed
	mkdir -p "$(dirname "$d")"
	git clone -q --bare "$w" "$d"
	git -C "$d" config http.receivepack true
	git -C "$d" config receive.denyNonFastForwards false
	rm -rf "$w"
}

fx_repos() {
	fx_bare "$T/git/github/e2e-org/repo.git"
	fx_bare "$T/git/gitlab/e2e-group/repo.git"
}

fx_api_start() {
	API_PORT=$(free_port)
	API_PLAIN=$(free_port)
	rm -f "$T/api.ready"
	"$PY" "$FX/fakeapi.py" --listen "$API_PLAIN" \
		--listen "$API_PORT:$PKI/api.github.com.pem:$PKI/api.github.com.key" \
		--log "$T/api.log" --gh-token "$GH_TOKEN_REAL" --gl-token "$GL_TOKEN_REAL" \
		--app-id "$APP_ID" --app-pub "$PKI/app.pub" --mint-count "$T/minted" \
		--ready "$T/api.ready" "$@" >>"$T/api.out" 2>&1 &
	track_pid $!
	FX_API_PID=$!
	wait_for 20 test -f "$T/api.ready" && wait_port "$API_PORT" && wait_port "$API_PLAIN"
}

# nginx server block for one git host. $1 name, $2 port, $3 cert base, $4 git root, $5 auth role, $6 extra
_fx_git_server() {
	cat <<EOF
	server {
		listen 127.0.0.1:$2 ssl;
		server_name $1;
		ssl_certificate $3.pem;
		ssl_certificate_key $3.key;
		client_max_body_size 0;
		location ~ ^/.+\.git/(info/refs|git-upload-pack|git-receive-pack|HEAD|objects/.*)\$ {
			auth_request /_auth;
			error_page 401 = @unauth;
			include /etc/nginx/fastcgi_params;
			fastcgi_param SCRIPT_FILENAME /usr/lib/git-core/git-http-backend;
			fastcgi_param GIT_PROJECT_ROOT $4;
			fastcgi_param GIT_HTTP_EXPORT_ALL "";
			fastcgi_param PATH_INFO \$uri;
			fastcgi_param REMOTE_USER token-holder;
			fastcgi_request_buffering off;
			fastcgi_pass unix:$T/nginx/fcgiwrap.sock;
		}
		location = /_auth {
			internal;
			proxy_pass http://127.0.0.1:$API_PLAIN/_auth/$5;
			proxy_pass_request_body off;
			proxy_set_header Content-Length "";
			proxy_set_header X-Original-URI \$request_uri;
			proxy_set_header X-Original-Method \$request_method;
			proxy_set_header X-Original-Host \$host;
		}
		location @unauth {
			add_header WWW-Authenticate 'Basic realm="$1"' always;
			return 401 "unauthorized\n";
		}
		location /big/ { root $T/www; }
		location = /hello { return 200 "hello from $1\n"; }
$6
	}
EOF
}

fx_nginx_start() {
	GH_PORT=$(free_port)
	GL_PORT=$(free_port)
	SINK_PORT=$(free_port)
	mkdir -p "$T/nginx/tmp" "$T/www/big"
	truncate -s 256M "$T/www/big/256m.bin"
	fcgiwrap -c 4 -s "unix:$T/nginx/fcgiwrap.sock" >>"$T/nginx/fcgiwrap.log" 2>&1 &
	track_pid $!
	# its preforked children are ours too: the parent first (it forks a new
	# child for each one that dies), then the children it had
	on_exit "_k=\$(pgrep -P $!); kill $! 2>/dev/null; kill \$_k 2>/dev/null"
	{
		cat <<EOF
user root;
worker_processes 1;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log warn;
events { worker_connections 4096; }
http {
	include /etc/nginx/mime.types;
	client_body_temp_path $T/nginx/tmp/body;
	proxy_temp_path $T/nginx/tmp/proxy;
	fastcgi_temp_path $T/nginx/tmp/fcgi;
	uwsgi_temp_path $T/nginx/tmp/uwsgi;
	scgi_temp_path $T/nginx/tmp/scgi;
	sendfile on;
	keepalive_requests 100000;
EOF
		echo "	log_format e2e '\$server_port \$host \"\$request\" \$status auth=\"\$http_authorization\" pauth=\"\$http_proxy_authorization\" cookie=\"\$http_cookie\" xfwd=\"\$http_x_forwarded_for\"';"
		echo "	access_log $T/nginx/access.log e2e;"
		_fx_git_server github.com \
			"$GH_PORT" "$PKI/github.com" "$T/git/github" github ""
		local h
		for h in uploads.github.com codeload.github.com raw.githubusercontent.com; do
			echo "$h ok" >"$T/www/$h.ok"
			cat <<EOF
	server {
		listen 127.0.0.1:$GH_PORT ssl;
		server_name $h;
		ssl_certificate $PKI/$h.pem;
		ssl_certificate_key $PKI/$h.key;
		location / {
			auth_request /_auth;
			error_page 401 = @unauth;
			default_type text/plain;
			root $T/www;
			try_files /$h.ok =404;
		}
		location = /_auth {
			internal;
			proxy_pass http://127.0.0.1:$API_PLAIN/_auth/github-any;
			proxy_pass_request_body off;
			proxy_set_header Content-Length "";
			proxy_set_header X-Original-URI \$request_uri;
			proxy_set_header X-Original-Host \$host;
		}
		location @unauth { return 401 "unauthorized\\n"; }
	}
EOF
		done
		cat <<EOF
	server {
		listen 127.0.0.1:$SINK_PORT;
		location / { return 200 "plain ok\n"; }
		location /big/ { root $T/www; }
	}
EOF
		_fx_git_server gitlab.com "$GL_PORT" "$PKI/gitlab.com" "$T/git/gitlab" gitlab \
			"		location /api/v4/ { proxy_pass http://127.0.0.1:$API_PLAIN; proxy_set_header Host \$host; }
		location = /api/graphql { proxy_pass http://127.0.0.1:$API_PLAIN; proxy_set_header Host \$host; }"
		echo "}"
	} >"$T/nginx/nginx.conf"
	nginx -p "$T/nginx" -c "$T/nginx/nginx.conf" -g 'daemon off;' >>"$T/nginx/stderr" 2>&1 &
	track_pid $!
	FX_NGINX_PID=$!
	wait_port "$GH_PORT" 20 && wait_port "$GL_PORT" 20 && wait_port "$SINK_PORT" 20 && wait_for 10 test -S "$T/nginx/fcgiwrap.sock"
}

# fx_recorder NAME [--cert C --key K] [--reply R]
fx_recorder() {
	local name=$1; shift
	REC_PORT=$(free_port)
	rm -f "$T/rec-$name.ready"
	: >"$T/rec-$name.bytes"
	: >"$T/rec-$name.events"
	"$PY" "$FX/recorder.py" --port "$REC_PORT" --out "$T/rec-$name.bytes" \
		--events "$T/rec-$name.events" --ready "$T/rec-$name.ready" "$@" \
		>>"$T/rec-$name.out" 2>&1 &
	track_pid $!
	wait_for 20 test -f "$T/rec-$name.ready"
}

fx_all() {
	fx_pki && fx_tokens && fx_repos && fx_api_start && fx_nginx_start
}

fx_client_home() {
	export HOME=$T/home
	mkdir -p "$HOME"
	export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 GIT_ASKPASS=/bin/false SSH_ASKPASS=/bin/false
	unset GH_TOKEN GITHUB_TOKEN GITLAB_TOKEN GH_ENTERPRISE_TOKEN 2>/dev/null || true
	git config --global user.name "e2e agent"
	git config --global user.email agent@e2e.test
	git config --global init.defaultBranch main
	git config --global credential.helper ""
}

# fx_no_token_in_client: no real token in this shell's environment or under $HOME.
fx_no_token_in_client() {
	local t
	for t in "$GH_TOKEN_REAL" "$GL_TOKEN_REAL" $(cat "$T/minted.tokens" 2>/dev/null); do
		env | grep -qF -- "$t" && { echo "token in env" >&2; return 1; }
		grep -rqF -- "$t" "$HOME" 2>/dev/null && { echo "token under HOME" >&2; return 1; }
	done
	return 0
}

# fx_api_count ROLE FIELD=VALUE...: lines of $T/api.log for ROLE (python filter).
# fx_api_q 'python expression over r (a log record)' -> count of matching records
fx_api_q() {
	"$PY" - "$T/api.log" "$1" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    h = {}
    for k, v in r["headers"]:
        h.setdefault(k.lower(), []).append(v)
    if eval(sys.argv[2], {"r": r, "h": h}):
        n += 1
print(n)
PY
}

# basic64 USER:PASS
b64() { printf '%s' "$1" | base64 -w0; }

# common.sh's free_port runs `python3` from PATH, which may be a slow
# version-manager shim; same function with Debian's python.
free_port() {
	"$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
