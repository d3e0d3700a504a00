#!/usr/bin/env bash
# install-deps.sh: installs every Debian package listed in deps/*.txt (one
# package a line, '#' comments) that is not installed yet. Parts of the
# project keep their own list so they never edit the same file. Runs apt-get
# only when something is missing, so a second `make test` starts at once.
set -eu
cd "$(dirname "$0")/.."
want=$(cat deps/*.txt | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
missing=()
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: need root to apt-get install (run as root or install the packages above)" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# npm parts (e.g. the MCP SDK client used by tests) install themselves from
# their package-lock.json with `npm ci` in scripts/deps-npm.sh if present.
if [ -x scripts/deps-npm.sh ]; then
	scripts/deps-npm.sh
fi
