#!/usr/bin/env bash
# r34-run-deps.sh: `make run` installs only the run set (issue 34): the
# lists of deps/ marked "# set: run" (build, runtime libraries, bubblewrap,
# the default image's builders, curl for scripts/run.sh), never a test tool
# nor the npm step; `make test` and `make deps` install every list and the
# npm step. Installs nothing: it reads what make would run (make -n) and
# asks the install script for its set (--list) and plan (--dry-run). With
# apt lists present, every run-set package must be one apt knows, and a
# simulated install on a fresh Debian 12 base (a dpkg status holding only
# the required packages and what they need; no network) must resolve with
# no test tool pulled in; it prints both sets' download sizes.
. "$(dirname "$0")/../lib/common.sh"
cd "$TOP" || exit 1
# the test-only tools that made `make run` slow (deps/apps.txt,
# proxy-tests.txt, cred-tests.txt, mirror-tests.txt, dev.txt, ...)
TEST_ONLY="chromium fonts-dejavu-core wrk mitmproxy squid-openssl gh nginx-light
fcgiwrap nodejs jq clang-14 clang-tidy-14 cppcheck awscli maven
default-jdk-headless docker-registry skopeo python3-botocore python3-yaml
gnupg dpkg-dev build-essential"
# the most a fresh machine downloads for the run set (MB): it was 94 MB
# when this test was written, every list was 567 MB
RUN_SET_MAX_MB=${RUN_SET_MAX_MB:-150}

# install_cmd TARGET: the install-deps.sh line `make -n TARGET` would run
install_cmd() {
	make -n --no-print-directory B="$B" "$1" 2>/dev/null | grep 'scripts/install-deps.sh'
}
for t in run image test deps; do
	install_cmd "$t" >"$T/cmd.$t"
	echo "make $t: $(cat "$T/cmd.$t")"
done
check "make run installs one set, once" test "$(wc -l <"$T/cmd.run")" = 1
check "make run: the run set" grep -qE 'install-deps\.sh run$' "$T/cmd.run"
check "make image: the run set" grep -qE 'install-deps\.sh run$' "$T/cmd.image"
check "make test: every list" grep -qE 'install-deps\.sh( all)?$' "$T/cmd.test"
check "make deps (CI, .ci/run via make test): every list" grep -qE 'install-deps\.sh( all)?$' "$T/cmd.deps"

# What each would install on a fresh machine: the script's own answer.
eval "$(cat "$T/cmd.run") --list" >"$T/run.set"
eval "$(cat "$T/cmd.test") --list" >"$T/all.set"
echo "run set ($(wc -l <"$T/run.set")): $(tr '\n' ' ' <"$T/run.set")"
check "the run set is not empty" test -s "$T/run.set"
check "the run set has no npm step" not_contains "$T/run.set" "deps-npm"
check "every list has the npm step" contains "$T/all.set" "scripts/deps-npm.sh"
in_run= not_all=
for p in $TEST_ONLY npm; do
	grep -qx -- "$p" "$T/run.set" && in_run="$in_run $p"
done
for p in $TEST_ONLY; do
	grep -qx -- "$p" "$T/all.set" || not_all="$not_all $p"
done
check "no test-only package in the run set (npm and$(echo " $TEST_ONLY" | tr '\n' ' '))${in_run:+: has$in_run}" \
	test -z "$in_run"
check "make test still installs them${not_all:+: misses$not_all}" test -z "$not_all"
missing=
for p in bubblewrap mmdebstrap e2fsprogs gcc make libc6-dev libevent-dev libssl-dev \
    libcurl4-openssl-dev libcjson-dev liblua5.4-dev libyaml-dev libidn2-dev node-llhttp \
    pkg-config busybox-static bash-static curl ca-certificates; do
	grep -qx -- "$p" "$T/run.set" || missing="$missing $p"
done
check "the run set has what building, running and the image build need${missing:+: misses$missing}" \
	test -z "$missing"
check "the run set is within every list's" bash -c "[ -z \"\$(comm -23 <(sort '$T/run.set') <(sort '$T/all.set'))\" ]"
# the set is the marked lists, all of them
sed 's/#.*//' $(grep -lx '# set: run' deps/*.txt) | tr -s ' \t' '\n' | grep -v '^$' | sort -u >"$T/marked"
check "the run set is exactly the lists marked '# set: run'" diff "$T/marked" <(sort "$T/run.set")
sed 's/#.*//' deps/*.txt | tr -s ' \t' '\n' | grep -v '^$' | sort -u >"$T/every"
check "make test's set is every list" diff "$T/every" <(grep -v deps-npm "$T/all.set" | sort)

# The plan on this machine (everything installed): no npm step for run.
eval "$(cat "$T/cmd.run") --dry-run" >"$T/dry.run" 2>&1
cat "$T/dry.run"
check "run --dry-run: no npm step" not_contains "$T/dry.run" "deps-npm"
bash scripts/install-deps.sh --list bogus >/dev/null 2>&1
check "a bad set is a usage error" test $? = 2

# ---- against apt's lists (no network) ----
if ! ls /var/lib/apt/lists/ 2>/dev/null | grep -q '_Packages'; then
	skip "run-set-in-apt" "no apt lists (/var/lib/apt/lists): run apt-get update to check the names"
	exit 0
fi
# one apt-cache call (each costs a second or more here): the names with a
# candidate version
apt-cache policy $(grep -v deps-npm "$T/run.set") 2>/dev/null |
	awk '/^[^ ].*:$/ { p = substr($0, 1, length($0) - 1) }
	    /^  Candidate:/ && $2 != "(none)" { print p }' | sort -u >"$T/known"
bad=$(comm -23 <(grep -v deps-npm "$T/run.set" | sort -u) "$T/known" | tr '\n' ' ')
bad=${bad% }
bad=${bad:+ $bad}
check "every run-set package is known to apt${bad:+ (unknown:$bad)}" test -z "$bad"

# A fresh Debian 12: the required packages and what they depend on, taken
# from this machine's dpkg status (as installed here), in a status file of
# our own; apt-get --print-uris from it is what a fresh machine fetches.
python3 - /var/lib/dpkg/status >"$T/fresh.status" 2>"$T/base.err" <<'PY'
import re, sys
recs = {}
for r in open(sys.argv[1]).read().split("\n\n"):
    m = re.search(r"^Package: (\S+)", r, re.M)
    if m and re.search(r"^Status: install ok installed$", r, re.M):
        recs[m.group(1)] = r
def deps(r):
    out = []
    for f in re.findall(r"^(?:Pre-)?Depends: (.*)$", r, re.M):
        for alt in f.split(","):
            names = [a.split()[0].split(":")[0] for a in alt.split("|") if a.strip()]
            out.append(next((n for n in names if n in recs), None))
    return [n for n in out if n]
todo = [n for n, r in recs.items()
        if re.search(r"^(Priority: required|Essential: yes)$", r, re.M)] + ["apt"]
base = set()
while todo:
    n = todo.pop()
    if n in base or n not in recs:
        continue
    base.add(n)
    todo += deps(recs[n])
for n in sorted(base):
    print(recs[n].strip() + "\n")
print(len(base), file=sys.stderr)
PY
mkdir -p "$T/arch/partial"
aptq() { apt-get -qq -o Debug::NoLocking=1 -o Dir::State::status="$1" \
	-o Dir::Cache::archives="$T/arch" "${@:2}"; }
nbase=$(tail -n 1 "$T/base.err")
check "a fresh base system modelled ($nbase packages)" test "$nbase" -gt 50
# size SET-FILE: "N packages, M MB" a fresh base would download for the set
size() {
	aptq "$T/fresh.status" --print-uris install --no-install-recommends \
	    $(grep -v deps-npm "$1") >"$1.uris" 2>"$1.err"
	awk '/^\x27/{n++; s+=$3} END{printf "%d packages, %d MB\n", n, s/1e6}' "$1.uris"
}
rs=$(size "$T/run.set")
as=$(size "$T/all.set")
echo "download on a fresh Debian 12 base: run set $rs; every list $as (plus the npm step)"
check "apt resolves the run set from a fresh base" bash -c "! grep -q '^E:' '$T/run.set.err' && test -s '$T/run.set.uris'"
cat "$T/run.set.err"
pulled=
for p in $TEST_ONLY; do
	[ "$p" = nodejs ] && continue	# node-llhttp, the llhttp C sources, depends on it
	grep -q "/${p}_[^/]*\.deb' " "$T/run.set.uris" && pulled="$pulled $p"
done
check "no test-only tool pulled in by the run set's dependencies${pulled:+ (pulled:$pulled)}" test -z "$pulled"
mb=${rs#*, }; mb=${mb% MB}
check "the run set downloads at most $RUN_SET_MAX_MB MB ($mb MB)" test "$mb" -le "$RUN_SET_MAX_MB"
