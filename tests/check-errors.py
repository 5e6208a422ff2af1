#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""The error lists of the documents agree with proto/statuses.def.

The declaration (printed by gen-protocol-tables --status-list) says which statuses the daemon
gives each request.  Each place below that documents a request's statuses must name every one
the declaration gives it ("required"), and may name only statuses the declaration gives it or
the requests it also talks about ("allowed"): a status named there and declared for none of
them is a contradiction between document and daemon.  Usage: check-errors.py SRCDIR GENERATOR
"""
import errno
import re
import subprocess
import sys

src, gen = sys.argv[1], sys.argv[2]
ENAME = re.compile(r"\bE[A-Z0-9]{2,}\b")
ERRNO_NAMES = {n for n in dir(errno) if n.startswith("E")}
# Errno names the library gives for its own reasons (the connection, its arguments), which no
# daemon status means.
NOT_STATUS = {"EBADFD", "ECONNRESET", "ECONNREFUSED", "EPIPE", "EWOULDBLOCK"}

decl = {}  # request -> {status: set of reply kinds}
for line in subprocess.run([gen, "--status-list"], check=True, capture_output=True,
                           text=True).stdout.splitlines():
    req, status, _value, reply, _closed = line.split()
    decl.setdefault(req, {}).setdefault(status, set()).add(reply)
everything = set().union(*(set(v) for v in decl.values()))
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def statuses(text):
    return {w for w in ENAME.findall(text) if w in ERRNO_NAMES and w not in NOT_STATUS}


def declared(requests, kinds=None):
    out = set()
    for r in requests:
        for status, replies in decl.get(r, {}).items():
            if kinds is None or replies & kinds:
                out.add(status)
    return out


def agree(where, text, required, allowed):
    named = statuses(text)
    for s in sorted(required - named):
        fail("%s does not name %s, which the daemon answers there" % (where, s))
    for s in sorted(named - allowed - required):
        fail("%s names %s, which the daemon never answers there" % (where, s))


def md_section(text, heading):
    """The text under a Markdown heading, up to the next heading of its level or above."""
    m = re.search(r"^(#+) " + re.escape(heading) + r".*$", text, re.M)
    if not m:
        fail("PROTOCOL.md has no section %r" % heading)
        return ""
    level = len(m.group(1))
    end = re.compile(r"^#{1,%d} " % level, re.M).search(text, m.end())
    return text[m.end():end.start() if end else len(text)]


def man_section(text, name):
    m = re.search(r"^\.SH " + name + r"\s*$(.*?)(?=^\.SH |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


ANY = {"ANY", "CONNECT"}
with open(src + "/proto/PROTOCOL.md") as f:
    proto = f.read()

# PROTOCOL.md section 7: one row per status, with the right value, and no other.
table = md_section(proto, "7. Status values")
table = table[:table.find("### Status matrix")]
rows = dict(re.findall(r"^\| `(E[A-Z0-9]+)` \| (\d+) \|", table, re.M))
agree("PROTOCOL.md section 7", " ".join(rows), everything, set())
values = {}
for line in subprocess.run([gen, "--status-list"], capture_output=True,
                           text=True).stdout.splitlines():
    w = line.split()
    values[w[1]] = w[2]
for s, v in rows.items():
    if s in values and values[s] != v:
        fail("PROTOCOL.md section 7 gives %s the value %s, the daemon %s" % (s, v, values[s]))

# PROTOCOL.md, request by request: (heading, requests documented, requests also talked about).
for heading, reqs, also in [
        ("3. Session", ["HELLO", "CONNECT"], ANY | {"PROCESS"}),
        ("PORT_CREATE / PORT_OPEN / PORT_CLOSE", ["PORT_CREATE", "PORT_OPEN", "PORT_CLOSE"],
         {"PROCESS"}),
        ("PROCESS", ["PROCESS"], ANY),
        ("POST", ["POST"], ANY),
        ("SOCKET_CLOSE", ["SOCKET_CLOSE"], {"PROCESS"}),
        ("Handoff: PORT_LINGER and PORT_TAKE", ["PORT_LINGER", "PORT_TAKE"],
         ANY | {"PROCESS", "SOCKET_CLOSE"}),
        # The status document counts errors by name, of any request.
        ("STATUS", ["STATUS"], set(decl)),
        ("CONTROL", ["CONTROL"], set()),
        ("PROCESS with AHEAD", [], {"PROCESS"}),
        ("Registration handles", [], {"PROCESS"})]:
    agree("PROTOCOL.md section %r" % heading, md_section(proto, heading), declared(reqs),
          declared(set(reqs) | also))

# socknotify-protocol(7): its generated STATUSES section holds every status; each request's
# entry under REQUESTS may name only statuses of that request.
with open(src + "/man/socknotify-protocol.7.in") as f:
    page = f.read()
entries = re.split(r"^\.TP\n", man_section(page, "DESCRIPTION"), flags=re.M)
for entry in entries[1:]:
    head = entry.split("\n", 1)[0]
    reqs = [r for r in decl if re.search(r"\b%s\b" % r, head)]
    if reqs:
        agree("socknotify-protocol(7) on %s" % "/".join(reqs), entry, set(),
              declared(set(reqs) | ANY | {"PROCESS"}))
agree("socknotify-protocol(7)", page, set(), everything)

# Man pages of the calls that make requests: every status the daemon answers the request in its
# own reply (or with results) reaches the caller, so ERRORS names it; minus those the library
# handles itself, with the reason.
LIBRARY = {
    ("PROCESS", "ETIMEDOUT"): "a wait that ends with nothing returns 0 entries",
    ("PROCESS", "EBUSY"): "the library never posts a second call ahead for one thread",
    ("PROCESS", "ESTALE"): "the library sends the item again with its descriptor",
    # sn_socket_close() drops the registration whatever the answer: ENOENT says there was none
    # (the daemon holds no copy either way), and it never sends a reserved field but 0.
    ("SOCKET_CLOSE", "ENOENT"): "the answer is not the caller's concern",
    ("SOCKET_CLOSE", "EINVAL"): "the library sends reserved 0",
}
for page_name, reqs in [("sn_port_create", ["PORT_CREATE", "PORT_OPEN", "PORT_CLOSE"]),
                        ("sn_port_process", ["PROCESS", "POST"]),
                        ("sn_socket_close", ["SOCKET_CLOSE"]),
                        ("sn_port_create_named_ex", ["PORT_LINGER"]),
                        ("sn_port_take_sockets", ["PORT_TAKE"])]:
    with open("%s/man/%s.3" % (src, page_name)) as f:
        errors = man_section(f.read(), "ERRORS")
    required = set()
    for r in reqs:
        for status, replies in decl.get(r, {}).items():
            if replies & {"REPLY", "RESULTS", "ITEM"} and not LIBRARY.get((r, status)):
                required.add(status)
    agree("%s(3) ERRORS" % page_name, errors, required, everything)

# docs/semantics.md names only statuses the daemon sends.
with open(src + "/docs/semantics.md") as f:
    agree("docs/semantics.md", f.read(), set(), everything)

if failures:
    print("FAIL: %d disagreement(s) between the documents and proto/statuses.def" % failures)
    sys.exit(1)
print("PASS: PROTOCOL.md, the man pages and docs/semantics.md agree with proto/statuses.def")
