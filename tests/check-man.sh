#!/bin/sh
# Man pages are lint-clean, and in step with the code: every option of socknotifyd --help has an
# entry in socknotifyd(8), every exported function is named in socknotify(3).
set -eu
src="${SN_SRCDIR:-.}"
build="${SN_BUILDDIR:-.}"
fail=0

if command -v mandoc >/dev/null 2>&1; then
        if mandoc -Tlint -W warning "$src"/man/*.[0-9]; then
                echo "PASS: mandoc -Tlint is clean"
        else
                echo "FAIL: mandoc -Tlint"; fail=1
        fi
else
        echo "SKIP: mandoc not installed"
fi

documented=$(sed 's/\\-/-/g' "$src/man/socknotifyd.8" | grep -o -- '--[a-z][a-z-]*' | sort -u)
for opt in $("$build/daemon/socknotifyd" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        if ! printf '%s\n' "$documented" | grep -qx -- "$opt"; then
                echo "FAIL: socknotifyd option $opt missing from socknotifyd.8"; fail=1
        fi
done
for fn in $(sed -n 's/^ *\(sn_[a-z0-9_]*\);$/\1/p' "$src/client/libsocknotify.sym" | grep -v '^sn_w32_'); do
        if ! grep -q "\\.BR\\? $fn ()\\|^\\.BI \"[^\"]*$fn(" "$src/man/socknotify.3"; then
                echo "FAIL: $fn missing from socknotify.3"; fail=1
        fi
done
# The Win32 names are the inline functions of winsock.h; each needs its synopsis line.
for fn in $(sed -n 's/^static inline [A-Za-z0-9_]* \**\([A-Za-z]*\)(.*/\1/p' "$src/include/socknotify/winsock.h"); do
        if ! grep -q "^\\.BI \"[^\"]*[ *]$fn(" "$src/man/socknotify-winsock.3"; then
                echo "FAIL: $fn missing from socknotify-winsock.3"; fail=1
        fi
done
[ $fail -eq 0 ] && echo "PASS: man pages cover every daemon option and exported function"
exit $fail
