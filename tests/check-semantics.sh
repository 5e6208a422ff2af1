#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# docs/semantics.md and the conformance suite name the same things: every row (1..80), rule
# (rule_NN) and daemon guarantee (LN) of the suite's list in tests/conformance/conformance.h is
# defined in docs/semantics.md, and every row, rule and L-rule of the document has its test.
# Nothing in the tree points outside it for the contract.
set -eu
src="${SN_SRCDIR:-.}"
doc="$src/docs/semantics.md"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# Ids of the document: table rows "| N |", numbered rules "N. **", and "- **LN ".
{
        sed -n 's/^| \([0-9][0-9]*\) | .*/\1/p' "$doc" | awk '{ printf "row_%02d\n", $1 }'
        sed -n '/^## 3\./,/^## 4\./s/^\([0-9][0-9]*\)\. \*\*.*/\1/p' "$doc" | awk '{ printf "rule_%02d\n", $1 }'
        sed -n 's/^- \*\*\(L[0-9]\) .*/\1/p' "$doc"
} | sort > "$tmp/doc"
grep -o 'X(\(row_[0-9]*\|rule_[0-9]*\|L[0-9]\),' "$src/tests/conformance/conformance.h" |
        sed 's/X(//;s/,//' | sort > "$tmp/suite"
if [ "$(wc -l < "$tmp/doc")" -lt 100 ]; then
        echo "FAIL: docs/semantics.md defines only $(wc -l < "$tmp/doc") rows and rules"; fail=1
fi
if diff -u "$tmp/doc" "$tmp/suite"; then
        echo "PASS: docs/semantics.md and the conformance suite name the same $(wc -l < "$tmp/doc") rows and rules"
else
        echo "FAIL: docs/semantics.md (-) and tests/conformance/conformance.h (+) differ"; fail=1
fi
# The contract is in the tree: no file of the distribution points to a copy outside it.
if grep -rIl --exclude-dir=.git --exclude-dir=build-aux --exclude=check-semantics.sh \
        -e '\.\./shared' -e '/work/shared' "$src" 2>/dev/null | grep -v '\.log$' > "$tmp/out"; then
        echo "FAIL: files point outside the tree:"; cat "$tmp/out"; fail=1
else
        echo "PASS: nothing points outside the tree"
fi
exit $fail
