# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""The protocol test vectors (proto/vectors/) through this binding's codec (_wire.py): every
vector's bytes decode to its decoded form, the ones the framing check refuses raise WireError,
and every well-formed request this binding can send encodes to exactly the vector's bytes.

_wire.py is an independent reading of PROTOCOL.md (written by hand, not generated), so this
compares two readings of the protocol.  It knows no CONTROL or CONTROL_REPLY (the binding sends
no CONTROL) nor the monitor's frames: those vectors are expected to fail until it does (strict xfail)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from socknotify import _wire as w

HERE = Path(__file__).resolve().parent
VECTORS = Path(os.environ.get("SN_SRCDIR") or HERE.parent.parent.parent) / "proto" / "vectors"

# The body struct of each type (None: no body fields), and its arrays' item structs ("byte": the
# array is text), as _wire.py declares them.
BODIES = {
    w.HELLO: w.HELLO_BODY,
    w.HELLO | w.REPLY_BIT: w.HELLO_REPLY_BODY,
    w.PORT_CREATE: w.PORT_CREATE_BODY,
    w.PORT_CREATE | w.REPLY_BIT: w.PORT_REPLY_BODY,
    w.PORT_CLOSE: w.PORT_BODY,
    w.PROCESS: w.PROCESS_BODY,
    w.PROCESS | w.REPLY_BIT: w.PROCESS_REPLY_BODY,
    w.POST: w.PORT_BODY,
    w.POST | w.REPLY_BIT: w.POST_REPLY_BODY,
    w.SOCKET_CLOSE: w.SOCKET_CLOSE_BODY,
    w.PORT_OPEN | w.REPLY_BIT: w.PORT_REPLY_BODY,
    w.THREAD_EXIT: w.THREAD_BODY,
    w.PORT_LINGER: w.PORT_LINGER_BODY,
    w.PORT_LINGER | w.REPLY_BIT: w.PORT_LINGER_REPLY_BODY,
    w.PORT_TAKE: w.PORT_TAKE_BODY,
    w.PORT_TAKE | w.REPLY_BIT: w.PORT_TAKE_REPLY_BODY,
    w.LIMIT_INFO | w.REPLY_BIT: w.LIMIT_INFO_REPLY_BODY,
}
ITEMS = {
    w.PORT_CREATE: ("byte", None),
    w.PORT_OPEN: ("byte", None),
    w.STATUS | w.REPLY_BIT: ("byte", None),
    w.PROCESS: (w.REGISTRATION, None),
    w.PROCESS | w.REPLY_BIT: (w.RESULT, w.ENTRY),
    w.POST: (w.PACKET, None),
    w.PORT_TAKE | w.REPLY_BIT: (w.REGISTRATION, None),
    w.LIMIT_INFO | w.REPLY_BIT: (w.REFUSAL, None),
}
# Types of the protocol that _wire.py does not know: CONTROL 0x0a and its reply, and the
# monitor's MONITOR_FRAME 0xfe (sent only to a connection that asked CONTROL to monitor).
MISSING = {0x0A, 0x8A, 0xFE}


def load() -> list:
    params = []
    for path in sorted(VECTORS.glob("*.json")):
        for v in json.loads(path.read_text())["vectors"]:
            data = bytes.fromhex(v["hex"])
            mtype = int.from_bytes(data[4:6], "little") if len(data) >= 6 else None
            marks = []
            if mtype in MISSING and v.get("expect", {}).get("framing", "ok") == "ok":
                marks.append(pytest.mark.xfail(strict=True,
                                               reason="_wire.py has no CONTROL, CONTROL_REPLY or MONITOR_FRAME"))
            params.append(pytest.param(v, id=v["name"], marks=marks))
    return params


VECTOR_LIST = load()


def wire_value(value):
    """A decoded field as the number it is (u64 fields are decimal strings in the vectors)."""
    return int(value) if isinstance(value, str) else value


def check_struct(st, raw: bytes, fields: dict) -> None:
    assert st.size == len(raw)
    assert list(st.unpack(raw)) == [wire_value(x) for x in fields.values()]


def pack(st, fields: dict) -> bytes:
    return st.pack(*[wire_value(x) for x in fields.values()])


def test_vectors_present():
    assert len(VECTOR_LIST) >= 60, f"only {len(VECTOR_LIST)} vectors in {VECTORS}"


@pytest.mark.parametrize("v", VECTOR_LIST)
def test_decode(v):
    data = bytes.fromhex(v["hex"])
    dec = v["decoded"]
    framing = v.get("expect", {}).get("framing", "ok")
    if framing != "ok":
        with pytest.raises(w.WireError):
            w.decode(data)
        return
    m = w.decode(data)
    hdr = dec["header"]
    assert (len(data), m.type, m.nfds, m.id, m.status, m.count, m.count2) == (
        hdr["size"], hdr["type"], hdr["nfds"], hdr["id"], hdr["status"], hdr["count"],
        hdr["count2"])
    body = BODIES.get(m.type)
    if body is None:
        assert m.body == b"" and dec["body"] == {}
    else:
        check_struct(body, m.body, dec["body"])
    i1, i2 = ITEMS.get(m.type, (None, None))
    for st, raw, want in ((i1, m.array1, dec.get("array1")), (i2, m.array2, dec.get("array2"))):
        if st is None:
            assert raw == b"" and not want
        elif st == "byte":
            assert raw.decode() == want
        else:
            assert len(raw) == st.size * len(want)
            for k, item in enumerate(want):
                check_struct(st, raw[k * st.size:(k + 1) * st.size], item)


@pytest.mark.parametrize("v", [p for p in VECTOR_LIST if p.values[0]["direction"] == "request"])
def test_encode_request(v):
    dec = v["decoded"]
    framing = v.get("expect", {}).get("framing", "ok")
    if framing != "ok" or dec["header"]["status"] != 0:
        pytest.skip("encode() builds well-formed requests only (status 0, sizes computed)")
    hdr = dec["header"]
    mtype = hdr["type"]
    body = BODIES.get(mtype)
    body_bytes = pack(body, dec["body"]) if body is not None else b""
    i1 = ITEMS.get(mtype, (None, None))[0]
    if i1 == "byte":
        array = dec["array1"].encode()
    elif i1 is not None:
        array = b"".join(pack(i1, item) for item in dec["array1"])
    else:
        array = b""
    data = w.encode(mtype, hdr["id"], body_bytes, array, hdr["count"], hdr["nfds"])
    assert data.hex() == v["hex"]
