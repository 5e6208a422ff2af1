# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""One version number: the Python package's is the C library's (sn_version_string()), the
pkg-config file's and the daemon's, all from configure.ac."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import daemon_binary

import socknotify as sn


def build_dir() -> Path:
    return Path(daemon_binary()).resolve().parent.parent


def asan_runtime(lib: Path) -> str | None:
    """The AddressSanitizer runtime lib needs (a --enable-sanitizers build), or None."""
    out = subprocess.run(["ldd", str(lib)], capture_output=True, text=True).stdout
    m = re.search(r"^\s*lib(?:asan|clang_rt\.asan\S*)\.so\S* => (\S+)", out, re.M)
    return m.group(1) if m else None


def test_version_is_the_c_library_s():
    assert re.fullmatch(r"\d+\.\d+\.\d+", sn.__version__), sn.__version__
    if os.environ.get("SN_VERSION"):  # make check passes configure's $(VERSION)
        assert sn.__version__ == os.environ["SN_VERSION"]
    lib = build_dir() / "client" / ".libs" / "libsocknotify.so.0"
    if not lib.exists():
        pytest.skip(f"no shared library at {lib}")
    # The library is loaded in a child interpreter: one built with the sanitizers needs their
    # runtime loaded first (LD_PRELOAD), and would abort this process otherwise.
    env = dict(os.environ)
    asan = asan_runtime(lib)
    if asan:
        env["LD_PRELOAD"] = asan
        env["ASAN_OPTIONS"] = "detect_leaks=0"  # the interpreter's own, not the library's
    code = ("import ctypes, sys\n"
            "c = ctypes.CDLL(sys.argv[1])\n"
            "c.sn_version_string.restype = ctypes.c_char_p\n"
            "c.sn_version.restype = ctypes.c_uint\n"
            "print(c.sn_version_string().decode(), c.sn_version())\n")
    out = subprocess.run([sys.executable, "-c", code, str(lib)], capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stderr
    text, number = out.stdout.split()
    assert text == sn.__version__
    major, minor, patch = (int(x) for x in sn.__version__.split("."))
    assert int(number) == (major << 16) | (minor << 8) | patch


def test_version_is_pkg_config_s_and_the_daemon_s():
    pc = build_dir() / "client" / "socknotify.pc"
    if not pc.exists():
        pytest.skip(f"no {pc}")
    version = re.search(r"^Version: (.*)$", pc.read_text(), re.M)
    assert version and version.group(1) == sn.__version__
    out = subprocess.run([daemon_binary(), "--version"], capture_output=True, text=True,
                         check=True).stdout
    assert out.split()[1] == sn.__version__
