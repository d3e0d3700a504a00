# tests/lib/mirror.sh: an internal package mirror built offline, for the e2e
# tests of "a sandbox installs packages through its egress proxy"
# (tests/e2e/46-runtime-install.sh). Source it after tests/lib/common.sh. It
# never touches the network: every package is made here, from nothing.
#
#   mirror_build        builds $MIRROR_WWW (served as the document root):
#                         debian/        a signed apt repository (suite e2e, component main)
#                                        with e2e-hello (a script and a postinst that runs
#                                        useradd and chown, as root) and e2e-hello-lib, which
#                                        it Depends on; InRelease and Release.gpg signed by a
#                                        throwaway ed25519 key
#                         debian-unsigned/  the same index without any signature
#                         py/            e2e_hello_py-1.0-py3-none-any.whl (console script
#                                        e2e-hello-py), written with zipfile, and a simple
#                                        index naming it: py/simple/e2e-hello-py/
#                         npm/           e2e-hello-npm-1.0.0.tgz (npm pack) under a registry
#                                        layout: GET /npm/e2e-hello-npm is its packument
#                       and, outside the document root:
#                         $MIRROR_KEY        the public key (binary keyring, for trusted.gpg.d)
#                         $MIRROR_LOCAL_DEB  e2e-local_1.0_all.deb (for dpkg -i), which ships a
#                                            setgid root:staff file (dpkg needs CAP_CHOWN and
#                                            CAP_FSETID to install it as built)
#                       MIRROR_NAME (default mirror.e2e.test) is the host name the apt sources
#                       and the packument's tarball URL use (port 80).
#   mirror_start ADDR   nginx serving $MIRROR_WWW on ADDR:$MIRROR_PORT (a free port); every
#                       request is logged to $MIRROR_LOG as one line:
#                         ADDR "REQUEST" STATUS host="H" ua="UA" auth="A" pauth="PA" via="V" xff="X"
#                       Also serves "HOST-ONLY" on 127.0.0.1:$MIRROR_HOSTONLY_PORT (a service a
#                       sandbox must never reach), logged to the same file.
#   mirror_selfcheck    exercises the fixture from the host, straight to nginx (no proxy):
#                       apt-get update / install --download-only into a throwaway apt tree
#                       (signature checked with $MIRROR_KEY), the unsigned suite refused,
#                       pip install --target of the wheel, npm install -g --prefix of the
#                       tarball. Prints ok/not ok lines named "fixture-*".
# Needs dpkg-deb and dpkg-scanpackages (dpkg-dev), gpg (gnupg), nginx (nginx-light),
# python3; apt-get, pip and npm for mirror_selfcheck (npm is skipped, said so, if absent).
MIRROR_NAME=${MIRROR_NAME:-mirror.e2e.test}
MIRROR_DIR=$T/mirror
MIRROR_WWW=$MIRROR_DIR/www
MIRROR_KEY=$MIRROR_DIR/e2e-mirror.gpg
MIRROR_LOCAL_DEB=$MIRROR_DIR/e2e-local_1.0_all.deb
MIRROR_LOG=$MIRROR_DIR/access.log
MIRROR_PY=/usr/bin/python3
MIRROR_WHEEL=e2e_hello_py-1.0-py3-none-any.whl
MIRROR_NPM_TGZ=e2e-hello-npm-1.0.0.tgz

# _mirror_deb NAME DIR: control file, maintainer scripts and tree in DIR -> pool .deb
_mirror_deb() {
	dpkg-deb --build -Zgzip "$2" "$MIRROR_DIR/$1_1.0_all.deb" >/dev/null
}

_mirror_debs() {
	local b=$MIRROR_DIR/build d
	rm -rf "$b" && mkdir -p "$b"
	# e2e-hello-lib: data only
	d=$b/e2e-hello-lib
	mkdir -p "$d/DEBIAN" "$d/usr/share/e2e-hello"
	echo "hello from the e2e mirror" >"$d/usr/share/e2e-hello/greeting"
	cat >"$d/DEBIAN/control" <<EOF
Package: e2e-hello-lib
Version: 1.0
Architecture: all
Maintainer: e2e tests <e2e@mirror.invalid>
Section: misc
Priority: optional
Description: data for e2e-hello (e2e test package)
EOF
	# e2e-hello: a script, a state directory, and a postinst doing what real
	# packages do as root (a system user, a file chowned to it)
	d=$b/e2e-hello
	mkdir -p "$d/DEBIAN" "$d/usr/bin" "$d/var/lib/e2e-hello"
	cat >"$d/usr/bin/e2e-hello" <<'EOF'
#!/bin/sh
# e2e-hello: prints the greeting of e2e-hello-lib and who owns its state file
cat /usr/share/e2e-hello/greeting
echo "state owner: $(stat -c %U:%G /var/lib/e2e-hello/state)"
EOF
	chmod 755 "$d/usr/bin/e2e-hello"
	cat >"$d/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
	if ! getent passwd e2ehello >/dev/null; then
		useradd --system --user-group --no-create-home --home-dir /var/lib/e2e-hello \
			--shell /usr/sbin/nologin e2ehello
	fi
	touch /var/lib/e2e-hello/state
	chown e2ehello:e2ehello /var/lib/e2e-hello/state
	chmod 0640 /var/lib/e2e-hello/state
fi
exit 0
EOF
	chmod 755 "$d/DEBIAN/postinst"
	cat >"$d/DEBIAN/control" <<EOF
Package: e2e-hello
Version: 1.0
Architecture: all
Maintainer: e2e tests <e2e@mirror.invalid>
Depends: e2e-hello-lib (>= 1.0)
Section: misc
Priority: optional
Description: e2e test package
 Prints a greeting; its postinst adds the system user e2ehello.
EOF
	# e2e-local: installed with dpkg -i; ships a setgid root:staff file
	d=$b/e2e-local
	mkdir -p "$d/DEBIAN" "$d/usr/bin" "$d/usr/lib/e2e-local"
	printf '#!/bin/sh\necho e2e-local ok\n' >"$d/usr/bin/e2e-local"
	printf '#!/bin/sh\nid -g\n' >"$d/usr/lib/e2e-local/tool"
	chown -R 0:0 "$d"
	chmod 755 "$d/usr/bin/e2e-local"
	chown 0:50 "$d/usr/lib/e2e-local/tool"
	chmod 2755 "$d/usr/lib/e2e-local/tool"
	cat >"$d/DEBIAN/control" <<EOF
Package: e2e-local
Version: 1.0
Architecture: all
Maintainer: e2e tests <e2e@mirror.invalid>
Section: misc
Priority: optional
Description: e2e test package installed with dpkg -i
EOF
	chown -R 0:0 "$b/e2e-hello-lib" "$b/e2e-hello"
	_mirror_deb e2e-hello-lib "$b/e2e-hello-lib" &&
		_mirror_deb e2e-hello "$b/e2e-hello" &&
		_mirror_deb e2e-local "$b/e2e-local"
}

# _mirror_release DIST-DIR: the Release file of a suite (hashes of its indexes)
_mirror_release() {
	local dir=$1 arch=$2 f
	{
		printf 'Origin: e2e\nLabel: e2e\nSuite: e2e\nCodename: e2e\n'
		printf 'Date: %s\n' "$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S UTC')"
		printf 'Architectures: %s\nComponents: main\nDescription: e2e test mirror\n' "$arch"
		printf 'SHA256:\n'
		for f in main/binary-$arch/Packages main/binary-$arch/Packages.gz; do
			printf ' %s %s %s\n' "$(sha256sum <"$dir/$f" | cut -d' ' -f1)" \
				"$(stat -c %s "$dir/$f")" "$f"
		done
	} >"$dir/Release"
}

_mirror_apt() {
	local arch repo dist g=$MIRROR_DIR/gnupg
	arch=$(dpkg --print-architecture)
	for repo in debian debian-unsigned; do
		dist=$MIRROR_WWW/$repo/dists/e2e
		mkdir -p "$MIRROR_WWW/$repo/pool/main/e" "$dist/main/binary-$arch"
		cp "$MIRROR_DIR/e2e-hello_1.0_all.deb" "$MIRROR_DIR/e2e-hello-lib_1.0_all.deb" \
			"$MIRROR_WWW/$repo/pool/main/e/"
		(cd "$MIRROR_WWW/$repo" && dpkg-scanpackages --arch "$arch" pool 2>/dev/null) \
			>"$dist/main/binary-$arch/Packages" || return 1
		gzip -9nk "$dist/main/binary-$arch/Packages"
		_mirror_release "$dist" "$arch"
	done
	# a throwaway signing key; its agent is ours and ends with the test
	mkdir -m 700 "$g"
	on_exit "gpgconf --homedir '$g' --kill gpg-agent 2>/dev/null"
	gpg --homedir "$g" --batch --pinentry-mode loopback --passphrase '' \
		--quick-gen-key 'e2e mirror <e2e@mirror.invalid>' ed25519 sign 2d 2>/dev/null &&
		gpg --homedir "$g" --batch --export >"$MIRROR_KEY" &&
		gpg --homedir "$g" --batch --yes --clearsign -o "$MIRROR_WWW/debian/dists/e2e/InRelease" \
			"$MIRROR_WWW/debian/dists/e2e/Release" 2>/dev/null &&
		gpg --homedir "$g" --batch --yes -abs -o "$MIRROR_WWW/debian/dists/e2e/Release.gpg" \
			"$MIRROR_WWW/debian/dists/e2e/Release" 2>/dev/null
}

# The wheel, written with zipfile: a module, a console script, dist-info with
# a RECORD of sha256 hashes (what pip wheel would make of the same sources).
_mirror_wheel() {
	mkdir -p "$MIRROR_WWW/py"
	"$MIRROR_PY" - "$MIRROR_WWW/py/$MIRROR_WHEEL" <<'PY'
import base64, hashlib, sys, zipfile
files = {
    "e2e_hello_py/__init__.py":
        'GREETING = "hello from the e2e wheel"\n\n\ndef main():\n    print(GREETING)\n',
    "e2e_hello_py-1.0.dist-info/METADATA":
        "Metadata-Version: 2.1\nName: e2e-hello-py\nVersion: 1.0\n"
        "Summary: e2e test package\n",
    "e2e_hello_py-1.0.dist-info/WHEEL":
        "Wheel-Version: 1.0\nGenerator: tests/lib/mirror.sh\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    "e2e_hello_py-1.0.dist-info/entry_points.txt":
        "[console_scripts]\ne2e-hello-py = e2e_hello_py:main\n",
    "e2e_hello_py-1.0.dist-info/top_level.txt": "e2e_hello_py\n",
}
record = []
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for name, text in files.items():
        data = text.encode()
        z.writestr(name, data)
        h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={h},{len(data)}")
    record.append("e2e_hello_py-1.0.dist-info/RECORD,,")
    z.writestr("e2e_hello_py-1.0.dist-info/RECORD", "\n".join(record) + "\n")
PY
	# a PEP 503 simple index naming it, with its hash (pip --index-url)
	local h
	h=$(sha256sum <"$MIRROR_WWW/py/$MIRROR_WHEEL" | cut -c1-64)
	mkdir -p "$MIRROR_WWW/py/simple/e2e-hello-py"
	printf '<!DOCTYPE html>\n<a href="e2e-hello-py/">e2e-hello-py</a>\n' >"$MIRROR_WWW/py/simple/index.html"
	printf '<!DOCTYPE html>\n<a href="../../%s#sha256=%s">%s</a>\n' "$MIRROR_WHEEL" "$h" "$MIRROR_WHEEL" \
		>"$MIRROR_WWW/py/simple/e2e-hello-py/index.html"
}

# The npm tarball (npm pack of a local directory) and its packument, so both
# `npm install URL` and `npm install --registry http://NAME/npm/ e2e-hello-npm` work.
_mirror_npm() {
	local src=$MIRROR_DIR/build/e2e-hello-npm pkg=$MIRROR_WWW/npm/e2e-hello-npm
	mkdir -p "$src/bin" "$pkg/-"
	cat >"$src/package.json" <<'EOF'
{
  "name": "e2e-hello-npm",
  "version": "1.0.0",
  "description": "e2e test package",
  "bin": { "e2e-hello-npm": "bin/hello.js" },
  "license": "MIT"
}
EOF
	printf '#!/usr/bin/env node\nconsole.log("hello from the e2e npm package");\n' >"$src/bin/hello.js"
	chmod 755 "$src/bin/hello.js"
	if command -v npm >/dev/null 2>&1; then
		(cd "$src" && npm pack --silent --pack-destination "$pkg/-" --cache "$MIRROR_DIR/npm-cache" \
			>/dev/null 2>&1) || return 1
	else
		# npm's layout by hand: the package under package/, a gzipped tar
		tar -C "$src/.." --transform 's|^e2e-hello-npm|package|' --owner=0 --group=0 \
			-czf "$pkg/-/$MIRROR_NPM_TGZ" e2e-hello-npm || return 1
	fi
	"$MIRROR_PY" - "$pkg/-/$MIRROR_NPM_TGZ" "$src/package.json" \
		"http://$MIRROR_NAME/npm/e2e-hello-npm/-/$MIRROR_NPM_TGZ" >"$pkg/index.json" <<'PY'
import base64, hashlib, json, sys
tgz = open(sys.argv[1], "rb").read()
meta = json.load(open(sys.argv[2]))
meta["dist"] = {
    "tarball": sys.argv[3],
    "shasum": hashlib.sha1(tgz).hexdigest(),
    "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode(),
}
print(json.dumps({"name": meta["name"], "dist-tags": {"latest": meta["version"]},
                  "versions": {meta["version"]: meta}}))
PY
}

mirror_build() {
	rm -rf "$MIRROR_DIR" && mkdir -p "$MIRROR_WWW" || return 1
	_mirror_debs || { echo "mirror: dpkg-deb failed" >&2; return 1; }
	_mirror_apt || { echo "mirror: apt index or signing failed" >&2; return 1; }
	_mirror_wheel || { echo "mirror: wheel failed" >&2; return 1; }
	_mirror_npm || { echo "mirror: npm pack failed" >&2; return 1; }
	chmod -R a+rX "$MIRROR_DIR/www"
}

mirror_start() {
	local addr=$1 n=$MIRROR_DIR/nginx
	MIRROR_ADDR=$addr
	MIRROR_PORT=$(free_port)
	MIRROR_HOSTONLY_PORT=$(free_port)
	mkdir -p "$n/tmp"
	cat >"$n/nginx.conf" <<EOF
user root;
worker_processes 1;
pid $n/nginx.pid;
error_log $n/error.log warn;
events { worker_connections 256; }
http {
	include /etc/nginx/mime.types;
	client_body_temp_path $n/tmp/body;
	proxy_temp_path $n/tmp/proxy;
	fastcgi_temp_path $n/tmp/fcgi;
	uwsgi_temp_path $n/tmp/uwsgi;
	scgi_temp_path $n/tmp/scgi;
	sendfile on;
	log_format mirror '\$remote_addr "\$request" \$status host="\$host" ua="\$http_user_agent" auth="\$http_authorization" pauth="\$http_proxy_authorization" via="\$http_via" xff="\$http_x_forwarded_for"';
	access_log $MIRROR_LOG mirror;
	server {
		listen $addr:$MIRROR_PORT;
		server_name _;
		root $MIRROR_WWW;
		location /npm/ {
			default_type application/json;
			try_files \$uri \$uri/index.json =404;
		}
	}
	server {
		listen 127.0.0.1:$MIRROR_HOSTONLY_PORT;
		location / { return 200 "HOST-ONLY\n"; }
	}
}
EOF
	nginx -p "$n" -c "$n/nginx.conf" -g 'daemon off;' >>"$n/stderr" 2>&1 &
	track_pid $!
	wait_for 20 bash -c "exec 3<>/dev/tcp/$addr/$MIRROR_PORT" && wait_port "$MIRROR_HOSTONLY_PORT" 20
}

# A throwaway apt tree ($1) that trusts $MIRROR_KEY and lists only the given
# sources line ($2); prints the APT_CONFIG file to use.
_mirror_apt_tree() {
	local d=$1
	mkdir -p "$d/etc/apt/apt.conf.d" "$d/etc/apt/preferences.d" "$d/etc/apt/sources.list.d" \
		"$d/etc/apt/trusted.gpg.d" "$d/var/lib/apt/lists/partial" \
		"$d/var/cache/apt/archives/partial" "$d/var/lib/dpkg" "$d/log"
	: >"$d/var/lib/dpkg/status"
	cp "$MIRROR_KEY" "$d/etc/apt/trusted.gpg.d/e2e-mirror.gpg"
	echo "$2" >"$d/etc/apt/sources.list"
	cat >"$d/apt.conf" <<EOF
Dir "$d/";
Dir::State::status "$d/var/lib/dpkg/status";
Dir::Log "$d/log";
Dir::Etc::Parts "$d/etc/apt/apt.conf.d";
APT::Sandbox::User "root";
Acquire::http::Proxy "DIRECT";
Acquire::Languages "none";
EOF
	echo "$d/apt.conf"
}

# check_log NAME LOG cmd...: like check, with LOG's last lines as the reason
# of a failure (so a broken step says what its tool printed).
check_log() {
	local name=$1 log=$2
	shift 2
	if "$@"; then ok "$name"; else fail "$name" "$(tail -n 6 "$log" 2>/dev/null | tr '\n' ' ')"; fi
}

mirror_selfcheck() {
	local base=http://$MIRROR_ADDR:$MIRROR_PORT d cf arch
	d=$MIRROR_DIR/selfcheck
	mkdir -p "$d"
	# apt: the signed suite updates, the dependency resolves, both packages download
	cf=$(_mirror_apt_tree "$d/apt" "deb $base/debian e2e main")
	APT_CONFIG=$cf apt-get -q update >"$d/apt-update.log" 2>&1
	check_log "fixture-apt-update-signed" "$d/apt-update.log" \
		bash -c '! grep -q "^[EW]:" "$1" && grep -q "InRelease" "$1"' _ "$d/apt-update.log"
	(cd "$d" && APT_CONFIG=$cf apt-get -q -y install --download-only e2e-hello) >"$d/apt-install.log" 2>&1
	arch=$d/apt/var/cache/apt/archives
	check_log "fixture-apt-resolves-depends" "$d/apt-install.log" \
		test -f "$arch/e2e-hello_1.0_all.deb" -a -f "$arch/e2e-hello-lib_1.0_all.deb"
	check "fixture-deb-has-postinst" bash -c "dpkg-deb -I '$arch/e2e-hello_1.0_all.deb' postinst | grep -q 'useradd --system'"
	check "fixture-local-deb-setgid" bash -c "dpkg-deb -c '$MIRROR_LOCAL_DEB' | grep -q '^-rwxr-sr-x root/staff .*usr/lib/e2e-local/tool'"
	# apt: the unsigned suite is refused
	cf=$(_mirror_apt_tree "$d/apt-u" "deb $base/debian-unsigned e2e main")
	APT_CONFIG=$cf apt-get -q update >"$d/apt-unsigned.log" 2>&1
	check_log "fixture-apt-refuses-unsigned" "$d/apt-unsigned.log" grep -q 'is not signed' "$d/apt-unsigned.log"
	# pip: the wheel installs, imports, and has its console script
	PIP_CONFIG_FILE=/dev/null "$MIRROR_PY" -m pip install -q --no-index --no-deps \
		--disable-pip-version-check --no-cache-dir --target "$d/py" "$base/py/$MIRROR_WHEEL" \
		>"$d/pip.log" 2>&1
	check_log "fixture-pip-install" "$d/pip.log" bash -c "PYTHONPATH='$d/py' '$MIRROR_PY' -c \
		'import e2e_hello_py; e2e_hello_py.main()' | grep -qx 'hello from the e2e wheel'"
	check_log "fixture-pip-console-script" "$d/pip.log" test -x "$d/py/bin/e2e-hello-py"
	PIP_CONFIG_FILE=/dev/null "$MIRROR_PY" -m pip download -q --no-deps --disable-pip-version-check \
		--no-cache-dir -d "$d/pyidx" --index-url "$base/py/simple/" e2e-hello-py==1.0 >"$d/pipidx.log" 2>&1
	check_log "fixture-pip-index" "$d/pipidx.log" cmp -s "$d/pyidx/$MIRROR_WHEEL" "$MIRROR_WWW/py/$MIRROR_WHEEL"
	# npm: the tarball installs globally (into a prefix) and its bin runs
	if command -v npm >/dev/null 2>&1; then
		npm install -g --prefix "$d/npm" --cache "$d/npm-cache" --no-audit --no-fund \
			--no-update-notifier "$base/npm/e2e-hello-npm/-/$MIRROR_NPM_TGZ" >"$d/npm.log" 2>&1
		check_log "fixture-npm-install" "$d/npm.log" bash -c "'$d/npm/bin/e2e-hello-npm' |
			grep -qx 'hello from the e2e npm package'"
		check "fixture-npm-packument" bash -c "curl -sf '$base/npm/e2e-hello-npm' |
			jq -e '.versions[\"1.0.0\"].dist.integrity | startswith(\"sha512-\")' >/dev/null"
	else
		skip "fixture-npm-install" "npm not installed on the host"
	fi
}
