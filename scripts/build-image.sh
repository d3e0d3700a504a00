#!/usr/bin/env bash
# scripts/build-image.sh: builds local sandbox images (directories that the
# local runtime mounts read-only under a per-sandbox overlay).
#
#   scripts/build-image.sh [DIR]          default Debian image (make image);
#                                          DIR defaults to $IMAGES_DIR/default
#                                          ($IMAGES_DIR: /var/lib/sandbox/images)
#   scripts/build-image.sh --busybox DIR  tiny busybox (+ static bash) image
#                                          for tests and benchmarks
#   scripts/build-image.sh --force ...    rebuild even if cached
#
# The default image is built with mmdebstrap (debootstrap as a fallback) from
# the Debian mirror configured in the host's apt sources, with the package
# list of images/default/packages.txt (the same as images/default/Dockerfile).
# It is cached: a stamp records the package list's hash and the suite, and a
# matching stamp skips the build. Progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=$PWD
force=0
mode=default
dir=
while [ $# -gt 0 ]; do
	case "$1" in
	--force) force=1 ;;
	--busybox) mode=busybox ;;
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	*) dir=$1 ;;
	esac
	shift
done

say() { printf '[build-image] %s\n' "$*" >&2; }

# replace_dir NEW DIR: NEW becomes DIR. Sandboxes started from the old DIR
# keep their files: it is renamed to .NAME.old beside it (their mounts
# follow the rename; a dot name is no image), not deleted; the one of the
# build before is deleted.
replace_dir() {
	local new=$1 d=$2 old
	old=$(dirname "$d")/.$(basename "$d").old
	if [ -e "$d" ]; then
		rm -rf "$old"
		mv "$d" "$old"
	fi
	mv "$new" "$d"
}

build_busybox() {
	local d=$1 bb bash_static a
	bb=$(command -v busybox || true)
	[ -n "$bb" ] && file -L "$bb" 2>/dev/null | grep -q static || bb=/bin/busybox
	if ! file -L "$bb" 2>/dev/null | grep -q 'statically linked'; then
		say "busybox-static is not installed (apt-get install busybox-static)"
		exit 1
	fi
	local stamp="busybox $(stat -c %s:%Y "$bb") $(stat -c %s:%Y /bin/bash-static 2>/dev/null || echo nobash)"
	if [ $force -eq 0 ] && [ -f "$d/.image-stamp" ] && [ "$(cat "$d/.image-stamp")" = "$stamp" ]; then
		say "busybox image $d is up to date"
		return 0
	fi
	say "building busybox image in $d"
	local tmp="$d.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"/{bin,sbin,usr/bin,usr/sbin,etc/ssl/certs,root,tmp,proc,sys,dev,run,workspace,var/tmp,home}
	chmod 1777 "$tmp/tmp" "$tmp/var/tmp"
	chmod 700 "$tmp/root"
	cp "$bb" "$tmp/bin/busybox"
	for a in $("$tmp/bin/busybox" --list); do
		[ -e "$tmp/bin/$a" ] || ln -s busybox "$tmp/bin/$a"
	done
	if [ -x /bin/bash-static ]; then
		rm -f "$tmp/bin/bash"
		cp /bin/bash-static "$tmp/bin/bash"
	fi
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$tmp/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$tmp/etc/group"
	printf 'hosts: files\n' >"$tmp/etc/nsswitch.conf"
	printf '127.0.0.1 localhost\n::1 localhost\n' >"$tmp/etc/hosts"
	: >"$tmp/etc/ssl/certs/ca-certificates.crt"
	echo "$stamp" >"$tmp/.image-stamp"
	replace_dir "$tmp" "$d"
	say "busybox image ready: $d ($(du -sh "$d" | cut -f1))"
}

build_default() {
	local d=$1 pkgs suite mirror hash stamp tmp
	pkgs=$(grep -v '^#' images/default/packages.txt | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
	suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
	mirror=$(grep -rhoE '^(URIs:|deb) +http[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
		awk '{print $2}' | grep -E '/debian/?$' | head -n1 || true)
	mirror=${mirror:-http://deb.debian.org/debian}
	# the layout version: bump it when the image's own files change
	hash=$(printf '%s %s %s layout-2' "$pkgs" "$suite" "$mirror" | sha256sum | cut -c1-16)
	stamp="debian $suite $hash"
	if [ $force -eq 0 ] && [ -f "$d/.image-stamp" ] && [ "$(cat "$d/.image-stamp")" = "$stamp" ]; then
		say "default image $d is up to date (delete it or use --force to rebuild)"
		return 0
	fi
	tmp="$d.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$(dirname "$d")"
	say "building the default image ($suite from $mirror) into $d"
	say "packages: $pkgs"
	if command -v mmdebstrap >/dev/null; then
		mmdebstrap --mode=root --variant=minbase --include="$pkgs" \
			--aptopt='APT::Install-Recommends "false"' \
			--dpkgopt='path-exclude=/usr/share/man/*' \
			--dpkgopt='path-exclude=/usr/share/doc/*' \
			--dpkgopt='path-include=/usr/share/doc/*/copyright' \
			--dpkgopt='path-exclude=/usr/share/locale/*' \
			--customize-hook='chroot "$1" mkdir -p /workspace' \
			--customize-hook='echo sandbox >"$1/etc/hostname" && chmod 644 "$1/etc/hostname"' \
			--customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
			"$suite" "$tmp" "$mirror" >&2
	elif command -v debootstrap >/dev/null; then
		debootstrap --variant=minbase --include="$pkgs" "$suite" "$tmp" "$mirror" >&2
		mkdir -p "$tmp/workspace"
		echo sandbox >"$tmp/etc/hostname" && chmod 644 "$tmp/etc/hostname"
		rm -rf "$tmp"/var/cache/apt/archives/*.deb
	else
		say "neither mmdebstrap nor debootstrap is installed"
		exit 1
	fi
	echo "$stamp" >"$tmp/.image-stamp"
	replace_dir "$tmp" "$d"
	say "default image ready: $d ($(du -sh "$d" | cut -f1))"
}

case $mode in
busybox)
	[ -n "$dir" ] || { say "usage: $0 --busybox DIR"; exit 2; }
	build_busybox "$dir" ;;
default)
	build_default "${dir:-${IMAGES_DIR:-/var/lib/sandbox/images}/default}" ;;
esac
