#!/usr/bin/env bash
# install-deps.sh [--list | --dry-run] [run | all]: installs the Debian
# packages listed in deps/*.txt (one package a line, '#' comments) that are
# not installed yet. Parts of the project keep their own list so they never
# edit the same file. Runs apt-get only when something is missing, so a
# second `make test` starts at once.
#
#   run   the lists holding the line "# set: run": what `make run` and
#         `make image` need (the compiler and headers of the build, the
#         daemons' libraries, bubblewrap and the runtime's tools, the
#         default image's build tools, what scripts/run.sh calls)
#   all   (the default) every list, then the npm packages of the tests
#         (scripts/deps-npm.sh): `make deps`, `make test`, CI
#   --list     print the set (its packages, one a line, then the npm step,
#              scripts/deps-npm.sh, for all) and install nothing
#   --dry-run  print what would be done now (the missing packages' apt-get
#              line, the npm step) and do nothing
set -eu
cd "$(dirname "$0")/.."
mode=install set=all
for a in "$@"; do
	case "$a" in
	--list) mode=list ;;
	--dry-run) mode=dry ;;
	run|all) set=$a ;;
	*) echo "usage: $0 [--list | --dry-run] [run | all]" >&2; exit 2 ;;
	esac
done
lists=()
for f in deps/*.txt; do
	if [ "$set" = all ] || grep -qx '# set: run' "$f"; then
		lists+=("$f")
	fi
done
want=$(cat "${lists[@]}" | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
if [ "$mode" = list ]; then
	printf '%s\n' $want
	[ "$set" = all ] && echo scripts/deps-npm.sh
	exit 0
fi
missing=()
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	if [ "$mode" = dry ]; then
		echo "apt-get install -y -qq --no-install-recommends ${missing[*]}"
	else
		if [ "$(id -u)" -ne 0 ]; then
			echo "install-deps: need root to apt-get install (run as root or install the packages above)" >&2
			exit 1
		fi
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
fi
# npm parts (e.g. the MCP SDK client used by tests) install themselves from
# their package-lock.json with `npm ci` in scripts/deps-npm.sh if present.
if [ "$set" = all ] && [ -x scripts/deps-npm.sh ]; then
	if [ "$mode" = dry ]; then
		echo "scripts/deps-npm.sh"
	else
		scripts/deps-npm.sh
	fi
fi
