#!/usr/bin/env bash
# layers.sh OBJ...: the calls between the given objects (one program's or
# one part's) must point one way. Prints each pair of objects that use
# symbols of each other ("CYCLE: a <-> b"), exits 1 if there is one.
# A symbol counts for the object that defines it (nm --defined-only); a
# use is an undefined symbol of another object (nm -u). Calls through
# function pointers (route tables, callbacks) are not links and do not count.
set -u
# No objects, or a glob that matched nothing, would pass vacuously.
[ $# -ge 2 ] || { echo "layers.sh: give two objects or more" >&2; exit 2; }
for o in "$@"; do
	[ -r "$o" ] || { echo "layers.sh: $o: no such object" >&2; exit 2; }
done
for o in "$@"; do
	# (nm -A names each line's object before a ':'.)
	case $o in *:*) echo "layers.sh: $o: a ':' in the path" >&2; exit 2 ;; esac
done
# One nm for all objects (one per object took most of the time).
declare -A def
while read -r l; do
	def[${l##* }]=${l%%:*}
done < <(nm -A --defined-only -g "$@")
edges=$(while read -r l; do
	o=${l%%:*} s=${l##* }
	d=${def[$s]:-}
	[ -n "$d" ] && [ "$d" != "$o" ] && echo "$o $d"
done < <(nm -A -u "$@") | sort -u)
declare -A edge
while read -r a b; do
	[ -n "$a" ] && edge["$a $b"]=1
done <<<"$edges"
rc=0
while read -r a b; do
	[ -z "$a" ] && continue
	if [[ "$a" < "$b" ]] && [ -n "${edge["$b $a"]:-}" ]; then
		echo "CYCLE: ${a#"${B:-build}"/} <-> ${b#"${B:-build}"/}"
		rc=1
	fi
done <<<"$edges"
exit $rc
