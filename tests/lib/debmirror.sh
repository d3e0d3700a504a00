# tests/lib/debmirror.sh: a signed apt repository of REAL Debian packages
# (the closure some packages need on top of an image), for tests that
# install tools inside a sandbox as root without adding them to the image
# (tests/e2e/r30-orch-clients-in-sandbox.sh: awscli and skopeo). Source after
# tests/lib/common.sh.
#
#   debm_fetch DIR IMAGE PKG...
#       the .debs apt would install on IMAGE (its /var/lib/dpkg/status) for
#       PKG... (no recommends), resolved with the host's apt lists and
#       downloaded by the host's apt-get from the host's sources (Debian's
#       archive) into DIR, reusing what /var/cache/apt/archives already
#       holds. Kept: DIR/stamp names the image's status and the packages, so
#       the next run with the same image and list downloads nothing. Needs
#       the network once (so call it before entering a network namespace).
#   debm_repo WWW DEBDIR
#       WWW/debian: suite e2e, component main, the .debs of DEBDIR in its
#       pool, Packages(.gz), Release, InRelease and Release.gpg signed by a
#       throwaway ed25519 key; WWW/../debm-key.gpg is its public key (binary
#       keyring, for trusted.gpg.d). Serve WWW with tests/lib/mirror.sh's
#       mirror_start (MIRROR_WWW=WWW).
# Needs apt-get, dpkg-scanpackages (dpkg-dev) and gpg (gnupg).

debm_fetch() {
	local dir=$1 img=$2 stamp want a
	shift 2
	want="$(sha256sum <"$img/var/lib/dpkg/status" | cut -c1-64) $*"
	mkdir -p "$dir/archives/partial" "$dir/cache"
	stamp=$dir/stamp
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && ls "$dir"/archives/*.deb >/dev/null 2>&1; then
		return 0
	fi
	rm -f "$stamp" "$dir"/archives/*.deb
	cat >"$dir/apt.conf" <<EOF
Dir::State::status "$img/var/lib/dpkg/status";
Dir::Cache "$dir/cache/";
Dir::Cache::archives "$dir/archives/";
APT::Install-Recommends "false";
APT::Sandbox::User "root";
EOF
	# what the host's apt cache already holds is not fetched again
	for a in $(APT_CONFIG=$dir/apt.conf apt-get -s -q install "$@" 2>/dev/null | awk '/^Inst /{print $2}'); do
		cp -l /var/cache/apt/archives/"${a}"_*.deb "$dir/archives/" 2>/dev/null || true
	done
	APT_CONFIG=$dir/apt.conf apt-get -q -y install --download-only "$@" >"$dir/fetch.log" 2>&1 || {
		# the lists may be older than the archive: once more after an update
		apt-get -q update >>"$dir/fetch.log" 2>&1
		APT_CONFIG=$dir/apt.conf apt-get -q -y install --download-only "$@" >>"$dir/fetch.log" 2>&1
	} || { tail -n 5 "$dir/fetch.log" >&2; return 1; }
	# keep only the debs of this closure (a reused file of another version goes)
	local keep
	keep=$(APT_CONFIG=$dir/apt.conf apt-get -s -q install "$@" 2>/dev/null | awk '/^Inst /{print $2}')
	for a in "$dir"/archives/*.deb; do
		grep -qx "$(dpkg-deb -f "$a" Package)" <<<"$keep" || rm -f "$a"
	done
	printf '%s\n' "$want" >"$stamp"
}

debm_repo() {
	local www=$1 debs=$2 arch dist g f
	arch=$(dpkg --print-architecture)
	dist=$www/debian/dists/e2e
	mkdir -p "$www/debian/pool/main" "$dist/main/binary-$arch" || return 1
	cp -l "$debs"/*.deb "$www/debian/pool/main/" 2>/dev/null || cp "$debs"/*.deb "$www/debian/pool/main/" || return 1
	(cd "$www/debian" && dpkg-scanpackages --arch "$arch" pool 2>/dev/null) \
		>"$dist/main/binary-$arch/Packages" || return 1
	gzip -9nk "$dist/main/binary-$arch/Packages"
	{
		printf 'Origin: e2e\nLabel: e2e\nSuite: e2e\nCodename: e2e\n'
		printf 'Date: %s\n' "$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S UTC')"
		printf 'Architectures: %s\nComponents: main\nDescription: e2e mirror of Debian packages\n' "$arch"
		printf 'SHA256:\n'
		for f in main/binary-$arch/Packages main/binary-$arch/Packages.gz; do
			printf ' %s %s %s\n' "$(sha256sum <"$dist/$f" | cut -d' ' -f1)" "$(stat -c %s "$dist/$f")" "$f"
		done
	} >"$dist/Release"
	g=$www/../debm-gnupg
	rm -rf "$g" && mkdir -m 700 "$g"
	on_exit "gpgconf --homedir '$g' --kill gpg-agent 2>/dev/null"
	gpg --homedir "$g" --batch --pinentry-mode loopback --passphrase '' \
		--quick-gen-key 'e2e debian mirror <e2e@mirror.invalid>' ed25519 sign 2d 2>/dev/null &&
		gpg --homedir "$g" --batch --export >"$www/../debm-key.gpg" &&
		gpg --homedir "$g" --batch --yes --clearsign -o "$dist/InRelease" "$dist/Release" 2>/dev/null &&
		gpg --homedir "$g" --batch --yes -abs -o "$dist/Release.gpg" "$dist/Release" 2>/dev/null &&
		chmod -R a+rX "$www"
}
