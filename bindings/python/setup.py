# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
"""Where setuptools builds: outside the source tree.

pyproject.toml declares the package; this file only moves setuptools' working directories
(build/ and socknotify.egg-info, which it would otherwise make next to this file) into a
temporary directory, removed when the build step ends.  So `pip install --no-build-isolation
bindings/python` leaves the source tree as it found it (pip runs each build step in a process
of its own: each gets its own directory).
"""

import atexit
import shutil
import tempfile

from setuptools import setup

_work = tempfile.mkdtemp(prefix="socknotify-build-")
atexit.register(shutil.rmtree, _work, True)

setup(options={"build": {"build_base": _work + "/build"}, "egg_info": {"egg_base": _work}})
