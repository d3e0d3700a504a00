#!/usr/bin/env bash
# lint.sh: banned calls, cppcheck and clang-tidy over the project's C.
set -u
cd "$(dirname "$0")/.."
rc=0
files=$(git ls-files '*.c' '*.h' | grep -v '^tests/fuzz/corpus')
if grep -nE '\b(sprintf|vsprintf|strcpy|strcat|strncpy|strtok|gets|atoi|atol)\s*\(' $files; then
	echo "lint: banned calls above (use snprintf, bounded copies, strnum_ll)"
	rc=1
fi
cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability \
    --inline-suppr -Icommon -Iorchestrator -Inetpol $(git ls-files '*.c' | grep -v '^tests/') || rc=1
for f in $(git ls-files '*.c' | grep -v '^tests/'); do
	clang-tidy-14 --quiet -checks='-*,clang-analyzer-*,bugprone-*,-bugprone-easily-swappable-parameters,-bugprone-implicit-widening-of-multiplication-result,-bugprone-sizeof-expression,-bugprone-reserved-identifier,-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling' \
	    "$f" -- -std=c11 -D_GNU_SOURCE -Icommon -Iorchestrator -Inetpol -Iagent -I/usr/share/include/llhttp \
	    $(pkg-config --cflags libevent openssl libcurl libcjson lua5.4 yaml-0.1) 2>/dev/null | grep -E 'warning|error' && rc=1
done
[ $rc -eq 0 ] && echo "lint: clean"
exit $rc
