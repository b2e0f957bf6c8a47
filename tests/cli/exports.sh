#!/bin/bash
# The shared library exports exactly the public API: every QT_API declaration in
# include/quanta/*.h and nothing else (no lib-internal qt__ names).
q="$1"
lib="$(dirname "$q")/libquanta.so"
inc="$(cd "$(dirname "$0")/../../include/quanta" && pwd)"
fail=0
if [ ! -e "$lib" ]; then echo "FAIL: $lib not built"; exit 1; fi
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDRB]$/ {print $3}' | sort -u >/tmp/exports_so.$$
grep -h '^QT_API' "$inc"/*.h | grep -o 'qt_[A-Za-z0-9_]*\s*[[(]' | grep -o 'qt_[A-Za-z0-9_]*' | sort -u >/tmp/exports_h.$$
internal=$(grep -c '^qt__' /tmp/exports_so.$$)
[ "$internal" = 0 ] || { echo "FAIL: $internal internal qt__ symbols exported:"; grep '^qt__' /tmp/exports_so.$$ | head; fail=1; }
missing=$(comm -13 /tmp/exports_so.$$ /tmp/exports_h.$$)
[ -z "$missing" ] || { echo "FAIL: declared QT_API but not exported (no definition?):"; echo "$missing"; fail=1; }
extra=$(comm -23 /tmp/exports_so.$$ /tmp/exports_h.$$ | grep '^qt_')
[ -z "$extra" ] || { echo "FAIL: exported but not declared QT_API in include/quanta:"; echo "$extra"; fail=1; }
# A declaration that starts a line without QT_API would be hidden from the .so.
bare=$(grep -nE '^(const |unsigned |struct )?[A-Za-z_][A-Za-z0-9_]*[ *]+qt_[A-Za-z0-9_]+ *\(' "$inc"/*.h | grep -v ':typedef\|:QT_API')
[ -z "$bare" ] || { echo "FAIL: public declarations without QT_API:"; echo "$bare"; fail=1; }
n=$(wc -l </tmp/exports_h.$$)
rm -f /tmp/exports_so.$$ /tmp/exports_h.$$
echo "exports: $n public symbols, $internal internal"
exit $fail
