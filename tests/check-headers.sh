#!/bin/sh
# The installed headers compile as C99 and as C++ (extern "C"), and the shared library exports
# exactly the symbols of its version script, all with the sn_ prefix.
set -eu
src="${SN_SRCDIR:-.}"
build="${SN_BUILDDIR:-.}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

printf '#include <socknotify.h>\n#include <socknotify/winsock.h>\nint main(void){return sn_strerror(0)==0;}\n' > "$tmp/t.c"
if ${CC:-cc} -std=c99 -Wall -Wextra -Werror -I"$src/include" -fsyntax-only "$tmp/t.c"; then
        echo "PASS: headers compile as C99"
else
        echo "FAIL: headers do not compile as C99"; fail=1
fi
cp "$tmp/t.c" "$tmp/t.cc"
if command -v ${CXX:-c++} >/dev/null 2>&1; then
        if ${CXX:-c++} -std=c++11 -Wall -Wextra -Werror -I"$src/include" -fsyntax-only "$tmp/t.cc"; then
                echo "PASS: headers compile as C++11"
        else
                echo "FAIL: headers do not compile as C++11"; fail=1
        fi
else
        echo "SKIP: no C++ compiler"
fi

lib=$(ls "$build"/client/.libs/libsocknotify.so.* 2>/dev/null | head -n 1)
if [ -n "$lib" ]; then
        nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sed 's/@.*//' | sort > "$tmp/exported"
        sed -n 's/^ *\(sn_[a-z0-9_]*\);$/\1/p' "$src/client/libsocknotify.sym" | sort > "$tmp/declared"
        if diff -u "$tmp/declared" "$tmp/exported"; then
                echo "PASS: libsocknotify exports exactly its version script ($(wc -l < "$tmp/exported") symbols)"
        else
                echo "FAIL: exported symbols differ from client/libsocknotify.sym"; fail=1
        fi
        for f in $(cat "$tmp/declared"); do
                cat "$src/include/socknotify.h" "$src/include/socknotify/winsock.h" | grep -q "\b$f(" ||
                        { echo "FAIL: $f not declared in the installed headers"; fail=1; }
        done
else
        echo "SKIP: shared library not built"
fi
exit $fail
