# 00-common: the harness itself and configuration checking of the binaries.
. "$(dirname "$0")/../lib/common.sh"
check "tmpdir exists" test -d "$T"
check "free_port gives a number" test -n "$(free_port)"
