#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# Man pages are lint-clean, and in step with the code: every option of socknotifyd --help has an
# entry in socknotifyd(8), every exported function is named in socknotify(3).
set -eu
src="${SN_SRCDIR:-.}"
build="${SN_BUILDDIR:-.}"
fail=0
# Real pages, and link pages (".so man3/target.3", resolved by man-db once installed).
pages=""
for p in "$src"/man/*.[0-9] "$build"/man/socknotify-protocol.7; do
        if head -n 1 "$p" | grep -q '^\.so '; then
                t=$(sed -n 's|^\.so man[0-9]/||p' "$p")
                [ -f "$src/man/$t" ] || { echo "FAIL: $p links to missing $t"; fail=1; }
        else
                pages="$pages $p"
        fi
done

if command -v mandoc >/dev/null 2>&1; then
        if mandoc -Tlint -W warning $pages; then
                echo "PASS: mandoc -Tlint is clean"
        else
                echo "FAIL: mandoc -Tlint"; fail=1
        fi
else
        echo "SKIP: mandoc not installed"
fi

# groff with every warning, at 80 columns as man(1) lays pages out in a terminal of that width:
# nothing on stderr (tables too wide, lines that cannot be adjusted, unknown requests).
if command -v groff >/dev/null 2>&1; then
        gfail=0
        for p in $pages; do
                groff -ww -t -man -Tutf8 -rLL=80n "$p" >/dev/null 2>"$build/man-groff.err" || true
                if [ -s "$build/man-groff.err" ]; then
                        echo "FAIL: groff -ww at 80 columns warns about $p:"
                        head -n 20 "$build/man-groff.err"
                        gfail=1
                fi
        done
        rm -f "$build/man-groff.err"
        [ $gfail -eq 0 ] && echo "PASS: groff -ww is clean at 80 columns" || fail=1
else
        echo "SKIP: groff not installed"
fi

documented=$(sed 's/\\-/-/g' "$src/man/socknotifyd.8" | grep -o -- '--[a-z][a-z-]*' | sort -u)
for opt in $("$build/daemon/socknotifyd" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        if ! printf '%s\n' "$documented" | grep -qx -- "$opt"; then
                echo "FAIL: socknotifyd option $opt missing from socknotifyd.8"; fail=1
        fi
done
# Every exported native function has a page by its name (the page of its group or a link to
# it), and the group page shows it in its synopsis.
for fn in $(sed -n 's/^ *\(sn_[a-z0-9_]*\);$/\1/p' "$src/client/libsocknotify.sym" | grep -v '^sn_w32_'); do
        page="$src/man/$fn.3"
        if [ ! -f "$page" ]; then
                echo "FAIL: no page man/$fn.3"; fail=1; continue
        fi
        target=$(sed -n 's|^\.so man3/\(.*\)$|\1|p' "$page")
        [ -n "$target" ] && page="$src/man/$target"
        if ! grep -q "^\\.BI \"[^\"]*[ *]$fn(" "$page"; then
                echo "FAIL: $fn missing from the synopsis of $(basename "$page")"; fail=1
        fi
        grep -q "$fn" "$src/man/socknotify.3" || { echo "FAIL: $fn not listed in socknotify.3"; fail=1; }
done
# The Win32 names are the inline functions of winsock.h; each needs its synopsis line.
for fn in $(sed -n 's/^static inline [A-Za-z0-9_]* \**\([A-Za-z]*\)(.*/\1/p' "$src/include/socknotify/winsock.h"); do
        if ! grep -q "^\\.BI \"[^\"]*[ *]$fn(" "$src/man/socknotify-winsock.3"; then
                echo "FAIL: $fn missing from socknotify-winsock.3"; fail=1
        fi
done
# Every page renders with man(1).
if command -v man >/dev/null 2>&1; then
        for p in $pages; do
                (MANWIDTH=80 man -l "$p" >/dev/null 2>"$build/man-render.err") ||
                        { echo "FAIL: man -l $p"; cat "$build/man-render.err"; fail=1; }
        done
        [ $fail -eq 0 ] && echo "PASS: every page renders with man -l"
else
        echo "SKIP: man not installed"
fi
rm -f "$build/man-render.err"
[ $fail -eq 0 ] && echo "PASS: man pages cover every daemon option and exported function"
exit $fail
