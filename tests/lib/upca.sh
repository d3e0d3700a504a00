# tests/lib/upca.sh: a throwaway CA and a leaf it signs, for the scripts that
# pose as TLS upstreams on loopback (10, 26, 45, r30-*). Source after
# tests/lib/common.sh. (tests/fixtures/mkpki.sh makes the fuller PKI of the
# fake GitHub: expired, untrusted and wrong-host leaves, the App's key.)
#
#   upca_mk CA_CRT CA_KEY LEAF_CRT LEAF_KEY NAME...
#       a P-256 CA (made unless CA_CRT exists; CN "test upstream CA") and a
#       leaf for the NAMEs (a dotted quad is an IP SAN, anything else DNS;
#       CN the first), both valid two days; files are written as named
upca_mk() {
	local cacrt=$1 cakey=$2 crt=$3 key=$4 san="" h
	shift 4
	for h in "$@"; do
		case $h in
		*[!0-9.]*) san="${san:+$san,}DNS:$h" ;;
		*) san="${san:+$san,}IP:$h" ;;
		esac
	done
	if [ ! -f "$cacrt" ]; then
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$cakey" \
			-out "$cacrt" -days 2 -subj "/CN=test upstream CA" 2>/dev/null || return 1
	fi
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$key" \
		-out "$crt.csr" -subj "/CN=$1" 2>/dev/null &&
	printf 'subjectAltName=%s\n' "$san" >"$crt.ext" &&
	openssl x509 -req -in "$crt.csr" -CA "$cacrt" -CAkey "$cakey" -CAcreateserial \
		-out "$crt" -days 2 -extfile "$crt.ext" 2>/dev/null
}
