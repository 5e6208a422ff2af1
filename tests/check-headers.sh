#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# The installed headers compile as C99 and as C++ (extern "C"); <socknotify/winsock.h> has the
# names Windows code uses (tests/compile/winsock-names.c, as C11, gnu11 and C++17); with
# SN_REFERENCE_SAMPLE=FILE, Microsoft's sample code (not shipped: it is not ours) compiles
# unchanged against them, with tests/compile/sample/ standing in for its Windows headers; the shared
# library exports exactly the symbols of its version script, all with the sn_ prefix, and every
# one of them is in the Debian symbols file; the version macros of socknotify.h, sn_version() and
# sn_version_string() all equal configure's version.
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

for std in c11 gnu11; do
        if ${CC:-cc} -std=$std -Wall -Wextra -Werror -I"$src/include" -fsyntax-only \
                "$src/tests/compile/winsock-names.c"; then
                echo "PASS: winsock.h has the Windows names ($std)"
        else
                echo "FAIL: winsock.h lacks Windows names ($std)"; fail=1
        fi
done
if command -v ${CXX:-c++} >/dev/null 2>&1; then
        if ${CXX:-c++} -std=c++17 -x c++ -Wall -Wextra -Werror -I"$src/include" -fsyntax-only \
                "$src/tests/compile/winsock-names.c"; then
                echo "PASS: winsock.h has the Windows names (C++17)"
        else
                echo "FAIL: winsock.h lacks Windows names (C++17)"; fail=1
        fi
        # "#pragma comment(lib, ...)" is the sample's; GCC ignores it.
        if [ -z "${SN_REFERENCE_SAMPLE:-}" ]; then
                echo "SKIP: SN_REFERENCE_SAMPLE not set (the reference's sample code, not shipped)"
        elif ${CXX:-c++} -std=c++17 -Wall -Wextra -Werror -Wno-unknown-pragmas -I"$src/include" \
                -I"$src/tests/compile/sample" -fsyntax-only -x c++ "$SN_REFERENCE_SAMPLE"; then
                echo "PASS: the reference's sample code compiles unchanged (C++17)"
        else
                echo "FAIL: the reference's sample code does not compile"; fail=1
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
        # Debian's symbols file lists every exported symbol (dpkg-gensymbols fails the package
        # build on a difference, which is caught here first).
        symbols="$src/debian/libsocknotify0.symbols"
        if [ -f "$symbols" ]; then
                sed -n 's/^ \(sn_[a-z0-9_]*\)@SOCKNOTIFY_[0-9.]* .*/\1/p' "$symbols" | sort > "$tmp/debian"
                if diff -u "$tmp/declared" "$tmp/debian"; then
                        echo "PASS: debian/libsocknotify0.symbols lists exactly the exported symbols"
                else
                        echo "FAIL: debian/libsocknotify0.symbols differs from client/libsocknotify.sym"; fail=1
                fi
        fi
        # The version: header macros, configure's version and the library's answers agree.
        version="${SN_VERSION:-}"
        if [ -z "$version" ] && [ -f "$build/config.h" ]; then
                version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$build/config.h")
        fi
        cat > "$tmp/v.c" <<'EOC'
#include <stdio.h>
#include <string.h>
#include <socknotify.h>
int main(void)
{
        char hdr[32];
        snprintf(hdr, sizeof(hdr), "%d.%d.%d", SN_VERSION_MAJOR, SN_VERSION_MINOR, SN_VERSION_PATCH);
        printf("%s %s %u %u\n", hdr, sn_version_string(), sn_version(), (unsigned)SN_VERSION_HEX);
        return 0;
}
EOC
        if ${CC:-cc} -std=c99 -Wall -Werror -I"$src/include" ${SN_TEST_LDFLAGS:-} "$tmp/v.c" "$lib" -o "$tmp/v" &&
           out=$(LD_LIBRARY_PATH="$(dirname "$lib")" "$tmp/v"); then
                set -- $out
                if [ "$1" = "$version" ] && [ "$2" = "$version" ] && [ "$3" = "$4" ]; then
                        echo "PASS: SN_VERSION_*, sn_version_string() and sn_version() say $version"
                else
                        echo "FAIL: versions disagree: configure '$version', header $1, library $2 ($3 vs $4)"
                        fail=1
                fi
        else
                echo "FAIL: cannot build a program calling sn_version()"; fail=1
        fi
else
        echo "SKIP: shared library not built"
fi
exit $fail
