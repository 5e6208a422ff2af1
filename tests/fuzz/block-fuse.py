#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# block-fuse.py - shows that a client can block socknotifyd by passing it a descriptor of a file
# on a FUSE filesystem whose server does not answer.
#
# The daemon checks a received descriptor with fstat() (a FUSE GETATTR request) and closes the
# descriptors it does not keep (a FUSE FLUSH request, sent on every close()), in its only
# thread: while the FUSE server does not answer, no other client is served.  Any user who may
# mount FUSE (fusermount3 is setuid on most systems) can do this.  The fuzz target cannot find
# it (it never makes FUSE files), so it is shown here by hand.
#
# Usage (root, /dev/fuse, Python >= 3.9):  tests/fuzz/block-fuse.py BUILDDIR/daemon/socknotifyd
# [getattr|flush]: which request the FUSE server leaves unanswered.  Prints what happened and
# exits 1 when the daemon was blocked, 0 when another client was served.  It cleans up after
# itself (answers what it held back, stops the daemon, unmounts).  Not run by make check.
import ctypes
import functools
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

if len(sys.argv) < 2:
    sys.exit('usage: block-fuse.py PATH/TO/socknotifyd [getattr|flush]')
daemon_path = sys.argv[1]
stall_op = {'getattr': 3, 'flush': 25}[sys.argv[2] if len(sys.argv) > 2 else 'getattr']
work = tempfile.mkdtemp(prefix='sn-fuse-')
mnt = os.path.join(work, 'mnt')
sock_path = os.path.join(work, 'sn.sock')
os.mkdir(mnt)
libc = ctypes.CDLL(None, use_errno=True)
print = functools.partial(print, flush=True)

fuse = os.open('/dev/fuse', os.O_RDWR)
opts = f'fd={fuse},rootmode=40000,user_id=0,group_id=0'.encode()
if libc.mount(b'sn-block-demo', mnt.encode(), b'fuse', 0, opts) != 0:
    sys.exit('mount: %s' % os.strerror(ctypes.get_errno()))
stall = threading.Event()
stalled = []


def attr(ino, mode):
    return struct.pack('<QQQQQQIIIIIIIIII', ino, 0, 0, 0, 0, 0, 0, 0, 0, mode, 1, 0, 0, 0, 4096, 0)


def reply(unique, err=0, body=b''):
    try:
        os.write(fuse, struct.pack('<IiQ', 16 + len(body), -err, unique) + body)
    except OSError:
        pass


def serve():
    while True:
        try:
            buf = os.read(fuse, 1 << 20)
        except OSError:
            return
        _, op, unique, node = struct.unpack('<IIQQ', buf[:24])
        if stall.is_set() and op == stall_op and node == 2:
            stalled.append((op, unique))
            continue  # not answered until release()
        if op == 26:  # INIT
            reply(unique, 0, struct.pack('<IIIIHHIIHHI7I', 7, 26, 0, 0, 0, 0, 4096, 1, 0, 0, 0,
                                         *[0] * 7))
        elif op == 1:  # LOOKUP: one regular file, attributes never cached
            reply(unique, 0, struct.pack('<QQQQII', 2, 0, 0, 0, 0, 0) + attr(2, 0o100644))
        elif op == 3:  # GETATTR
            if node == 1:
                reply(unique, 0, struct.pack('<QII', 0, 0, 0) + attr(node, 0o40755))
            else:
                answer(op, unique, node)
        elif op == 14:  # OPEN
            reply(unique, 0, struct.pack('<QII', 0, 0, 0))
        elif op in (25, 18):  # FLUSH, RELEASE
            reply(unique)
        else:
            reply(unique, 38)  # ENOSYS


def answer(op, unique, node=2):
    if op == 3:
        reply(unique, 0, struct.pack('<QII', 0, 0, 0) + attr(node, 0o100644))
    else:
        reply(unique)


def release():
    """Answers the requests left waiting, so that every process can close the file again."""
    stall.clear()
    for op, unique in stalled:
        answer(op, unique)


def abort_fuse():
    ctl = '/sys/fs/fuse/connections'
    mounted_ctl = False
    if not os.listdir(ctl):
        mounted_ctl = subprocess.call(['mount', '-t', 'fusectl', 'none', ctl]) == 0
    try:
        with open(os.path.join(ctl, str(os.minor(dev)), 'abort'), 'w') as f:
            f.write('1')
    except OSError as e:
        print('could not abort the FUSE connection:', e)
    subprocess.call(['umount', '-l', mnt])
    if mounted_ctl:
        subprocess.call(['umount', ctl])


def names():
    return '/'.join({3: 'GETATTR', 25: 'FLUSH'}[op] for op, _ in stalled)


def hdr(size, typ, nfds, rid, count=0):
    return struct.pack('<IHHIIII', size, typ, nfds, rid, 0, count, 0)


HELLO = hdr(36, 1, 0, 1) + struct.pack('<IHHI', 0x46544e53, 1, 1, 0)


def client():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(3)
    s.connect(sock_path)
    s.send(HELLO)
    s.recv(4096)
    return s


threading.Thread(target=serve, daemon=True).start()
dev = os.stat(mnt).st_dev  # answered by serve()
daemon = subprocess.Popen([daemon_path, '--socket', sock_path], stderr=subprocess.DEVNULL)
blocked = False
f = -1
try:
    for _ in range(50):
        if os.path.exists(sock_path):
            break
        time.sleep(0.1)
    s = client()
    s.send(hdr(32, 2, 0, 2) + struct.pack('<II', 0, 0))  # PORT_CREATE
    s.recv(4096)
    f = os.open(os.path.join(mnt, 'file'), os.O_RDONLY)
    stall.set()
    # PROCESS: ENABLE the FUSE file (not a socket; the answer would be ENOTSOCK).
    reg = struct.pack('<QQQHBBII', 7, 0, 0, 1, 1, 4, 0, f)
    socket.send_fds(s, [hdr(80, 4, 1, 3, 1) + struct.pack('<IIIII', 1, 0, 0, 0, 1) + reg], [f])
    time.sleep(1)
    t0 = time.time()
    try:
        client()
        print('another client was served in %.2f s: the daemon is not blocked (%s)'
              % (time.time() - t0, names() or 'nothing stalled'))
    except OSError as e:
        blocked = True
        print('another client got no HELLO_REPLY in %.1f s (%s); the daemon waits for FUSE %s:'
              % (time.time() - t0, e, names()))
        with open('/proc/%d/stack' % daemon.pid) as st:
            print(''.join('    ' + line for line in st.readlines()[:6]), end='')
finally:
    release()
    daemon.kill()
    daemon.wait()
    if f >= 0:
        os.close(f)
    abort_fuse()
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if blocked else 0)
