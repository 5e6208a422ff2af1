#!/bin/bash
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
#
# harness.sh - a real systemd (the host's /usr/lib/systemd/systemd) as PID 1 of a private set
# of namespaces, to test socknotify's units live on hosts whose own PID 1 is not systemd (CI
# containers, build machines).  Root only.
#
# Used two ways:
#   * sourced by a test script: `. tests/systemd/harness.sh`, then the sdh_* functions below;
#   * from a shell, to look around by hand (the same functions):
#       tests/systemd/harness.sh start NAME          boot instance NAME
#       tests/systemd/harness.sh install NAME        put this build's daemon and units in it
#       tests/systemd/harness.sh exec NAME CMD...    run CMD inside (systemctl, journalctl, ...)
#       tests/systemd/harness.sh stop NAME           power it off and remove every trace
#     (install reads SN_BUILDDIR and SN_SRCDIR, default: the current directory.)
#
# What an instance is.  `unshare` makes new PID, mount, UTS, IPC, network and cgroup
# namespaces; the first process of the PID namespace sets up the mounts below and execs systemd,
# which then boots multi-user.target as PID 1 in about a second.  Inside:
#   /run      a fresh tmpfs (journald's volatile journal, the units' sockets live here);
#   /usr, /etc, /var  overlays whose upper layer is in that tmpfs: everything installed or
#             changed inside (binaries, units, enablement links, sysusers' groups, ld.so.cache,
#             even a `dpkg -i` with its database) is private to the instance and vanishes with it;
#   /usr/lib/systemd/system  only the targets, slices and services a boot needs (journald,
#             user@.service, the poweroff path), so none of the host's services start;
#   /etc/systemd/{system,user}  empty (the host's enablement links are hidden), generators
#             hidden;
#   /dev      a small tmpfs with null, zero, full, random, urandom, tty, a private devpts and
#             shm; /dev/console and /dev/kmsg are files in the instance directory (console.log,
#             kmsg.log), so PID 1's messages land there before journald runs;
#   /sys, /proc/sys  read-only; /sys/fs/cgroup  a cgroup2 mount rooted at the instance's own
#             cgroup (a child of the host's cgroup2 hierarchy: /sys/fs/cgroup on a pure v2
#             host, /sys/fs/cgroup/unified on a "hybrid" one);
#   network   a private namespace (loopback only; systemd brings `lo` up).
# /tmp, /work, /home and the rest are the host's: tests exchange files through them, and a
# build tree is visible at the same path.
#
# Functions (each returns non-zero with a message on stderr when it fails; every wait is
# bounded by a timeout in seconds):
#   sdh_prereq                   0, or prints why an instance cannot run here and returns 77
#   sdh_start NAME               boots NAME (SDH_BOOT_TIMEOUT, default 60) and waits until
#                                `systemctl is-system-running` is running or degraded
#   sdh_exec NAME CMD...         runs CMD inside with a clean environment (add variables with
#                                `env VAR=value CMD...`); returns CMD's status
#   sdh_install NAME [BUILD SRC] installs the build's socknotifyd as /usr/local/sbin/socknotifyd,
#                                socknotifyctl as /usr/local/bin/socknotifyctl (its library in
#                                /usr/local/lib, ldconfig), the system and user units (made
#                                from systemd/*.in exactly as `make` does, with sbindir
#                                /usr/local/sbin and bindir /usr/local/bin) under
#                                /usr/local/lib/systemd/{system,user}, the sysusers snippet
#                                under /usr/local/lib/sysusers.d; runs systemd-sysusers and
#                                daemon-reload.  Call again after a rebuild to upgrade.  For
#                                a sanitizer build it adds a drop-in that turns LeakSanitizer
#                                off (it needs ptrace, which the unit's syscall filter denies).
#   sdh_dropin NAME UNIT FILE TEXT  writes /etc/systemd/system/UNIT.d/FILE.conf, daemon-reload
#   sdh_journal NAME UNIT [ARGS] the journal of UNIT (journalctl -u UNIT -o short-unix ARGS)
#   sdh_wait_state NAME UNIT STATE TIMEOUT  waits until UNIT's ActiveState is STATE
#   sdh_wait_journal NAME UNIT REGEX TIMEOUT  waits until a line of UNIT's journal matches
#   sdh_wait TIMEOUT CMD...      runs CMD every 0.1 s until it succeeds or TIMEOUT passes
#   sdh_scale SECONDS            prints SECONDS times $CK_TIMEOUT_MULTIPLIER (1 when unset), at
#                                least 1; every TIMEOUT of these functions is scaled so, as
#                                Check scales a case's timeout on slow or busy machines
#   sdh_prop NAME UNIT PROPERTY  one property (systemctl show -P)
#   sdh_stop NAME                poweroff (SIGRTMIN+4 to PID 1), SIGKILL after 15 s, then
#                                removes the cgroup and the instance directory
#   sdh_user_start NAME USER     starts USER's `systemd --user` (user@UID.service) and waits
#                                until it runs (the instance has no logind: see sdh__boot)
#   sdh_user_exec NAME USER CMD...  runs CMD inside as USER, with XDG_RUNTIME_DIR=/run/user/UID
#                                (so `systemctl --user` and the client's default path work)
# An instance's files are in ${SDH_DIR:-/tmp}/socknotify-sdh.NAME (pid1, pidns, unshare,
# cgroup, console.log, kmsg.log; the logs are kept after stop when SDH_KEEP_LOGS is set).  Test
# scripts call sdh_stop from an EXIT trap; if one is killed outright, a watcher started with the
# instance stops it once the owner (SDH_OWNER, default: the shell that sourced this file; none
# for the command line) is gone.  `harness.sh stop NAME` removes what anything else left.
#
# Facts this relies on: systemd refuses to boot without a writable cgroup2 hierarchy; it treats
# SIGRTMIN+4 as "poweroff", and in a container (the `container` variable set) exits when done,
# which ends the PID namespace; killing PID 1 of a PID namespace kills every process in it.

SDH_SYSTEMD=${SDH_SYSTEMD:-/usr/lib/systemd/systemd}
SDH_DIR=${SDH_DIR:-/tmp}
SDH_SELF=$(readlink -f "${BASH_SOURCE[0]}")

sdh__die() { echo "harness: $*" >&2; return 1; }

# The host's cgroup2 mount, or nothing.
sdh__cgroot() {
        local d
        for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
                if [ "$(stat -fc %T "$d" 2>/dev/null)" = cgroup2fs ]; then
                        echo "$d"
                        return 0
                fi
        done
        return 1
}

sdh_prereq() {
        local t
        if [ "$(id -u)" != 0 ]; then
                echo "SKIP: the systemd harness needs root (namespaces, mounts, cgroups)"
                return 77
        fi
        for t in unshare nsenter setpriv mount "$SDH_SYSTEMD" systemctl journalctl \
                        systemd-sysusers; do
                if ! command -v "$t" >/dev/null 2>&1; then
                        echo "SKIP: $t not found"
                        return 77
                fi
        done
        if ! sdh__cgroot >/dev/null; then
                echo "SKIP: no cgroup2 hierarchy mounted (systemd needs one)"
                return 77
        fi
        if [ ! -w "$(sdh__cgroot)/cgroup.procs" ]; then
                echo "SKIP: the cgroup2 hierarchy is not writable here"
                return 77
        fi
        if ! grep -qw overlay /proc/filesystems && ! modprobe overlay 2>/dev/null; then
                echo "SKIP: overlayfs unavailable (the instance's /usr and /etc are overlays)"
                return 77
        fi
        if ! unshare --pid --fork --mount --uts --ipc --net --cgroup --propagation private \
                        true 2>/dev/null; then
                echo "SKIP: cannot create PID, mount, UTS, IPC, network and cgroup namespaces"
                return 77
        fi
        return 0
}

# ---- inside: PID 1 of the new namespaces, before it becomes systemd ------------------------
sdh__boot() {
        local dir=$1 p=/run/sdh d n
        set -e
        mount -t tmpfs -o mode=0755,nosuid,nodev,size=128m sdh-run /run
        mkdir -p $p
        # Writable, private /usr, /etc and /var.
        for d in usr etc var; do
                mkdir -p $p/$d.upper $p/$d.work
                mount -t overlay -o lowerdir=/$d,upperdir=$p/$d.upper,workdir=$p/$d.work \
                        sdh-$d /$d
        done
        # Only the units a boot and a poweroff need; the rest of the host's stay hidden.
        n=/usr/lib/systemd/system
        mkdir -p $p/units
        cp -a $n/*.target $n/*.slice $n/systemd-journald.service $n/systemd-journald.socket \
                $n/systemd-journald-dev-log.socket $n/systemd-exit.service \
                $n/systemd-poweroff.service $n/systemd-halt.service $n/systemd-reboot.service \
                $n/user@.service $n/user-runtime-dir@.service $p/units/
        [ ! -d $n/user-.slice.d ] || cp -a $n/user-.slice.d $p/units/
        mkdir -p $p/units/sockets.target.wants $p/units/sysinit.target.wants
        ln -s ../systemd-journald.socket ../systemd-journald-dev-log.socket \
                $p/units/sockets.target.wants/
        ln -s ../systemd-journald.service $p/units/sysinit.target.wants/
        mount --bind $p/units $n
        # The user manager's units: targets only (the host enables desktop services there).
        n=/usr/lib/systemd/user
        mkdir -p $p/user-units
        cp -a $n/*.target $n/systemd-exit.service $p/user-units/
        ! ls $n/*.slice >/dev/null 2>&1 || cp -a $n/*.slice $p/user-units/
        mount --bind $p/user-units $n
        mkdir -p $p/empty
        for d in system-generators user-generators system-environment-generators \
                        user-environment-generators; do
                [ ! -d /usr/lib/systemd/$d ] || mount --bind $p/empty /usr/lib/systemd/$d
        done
        rm -rf /usr/local/lib/systemd /usr/local/lib/sysusers.d     # a host install, if any
        mount -t tmpfs -o mode=0755 sdh-etc-system /etc/systemd/system
        mount -t tmpfs -o mode=0755 sdh-etc-user /etc/systemd/user
        # Manager and journald settings for a test instance.
        mkdir -p /run/systemd/system.conf.d /run/systemd/journald.conf.d
        printf '[Manager]\nDefaultLimitCORE=0\nDefaultTimeoutStopSec=10s\n' \
                > /run/systemd/system.conf.d/sdh.conf
        printf '%s\n' '[Journal]' Storage=volatile ReadKMsg=no ForwardToSyslog=no \
                ForwardToConsole=no > /run/systemd/journald.conf.d/sdh.conf
        # user@UID.service without logind and D-Bus: the runtime directory made directly, and
        # the variable pam_systemd would set.
        mkdir -p /run/systemd/system/user-runtime-dir@.service.d /run/systemd/system/user@.service.d
        printf '%s\n' '[Service]' 'ExecStart=' \
                "ExecStart=/bin/sh -c 'install -d -m 0700 -o %i -g \$\$(id -g %i) /run/user/%i'" \
                'ExecStop=' 'ExecStop=/bin/rm -rf /run/user/%i' \
                > /run/systemd/system/user-runtime-dir@.service.d/sdh.conf
        printf '[Service]\nEnvironment=XDG_RUNTIME_DIR=/run/user/%%i\n' \
                > /run/systemd/system/user@.service.d/sdh.conf
        # A private /dev.
        d=$p/dev
        mkdir -p $d
        mount -t tmpfs -o mode=0755,nosuid sdh-dev $d
        for n in null zero full random urandom tty; do
                touch $d/$n
                mount --bind /dev/$n $d/$n
        done
        mkdir $d/pts $d/shm
        mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts $d/pts
        mount -t tmpfs -o mode=1777,nosuid,nodev sdh-shm $d/shm
        ln -s pts/ptmx $d/ptmx
        ln -s /proc/self/fd $d/fd
        ln -s /proc/self/fd/0 $d/stdin
        ln -s /proc/self/fd/1 $d/stdout
        ln -s /proc/self/fd/2 $d/stderr
        : > "$dir/kmsg.log"
        touch $d/console $d/kmsg
        mount --bind "$dir/kmsg.log" $d/kmsg
        mount --bind "$dir/console.log" $d/console
        mount --move $d /dev
        # Kernel settings and the host's devices stay out of reach; cgroup2 for systemd.
        mount --bind /proc/sys /proc/sys
        mount -o remount,bind,ro /proc/sys
        if [ -e /proc/sysrq-trigger ]; then
                mount --bind /proc/sysrq-trigger /proc/sysrq-trigger
                mount -o remount,bind,ro /proc/sysrq-trigger
        fi
        mount -o remount,bind,ro /sys
        mount -t cgroup2 -o rw,nosuid,nodev,noexec cgroup2 /sys/fs/cgroup
        cd /
        exec env -i container=socknotify-test PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
                "$SDH_SYSTEMD" --unit=multi-user.target --show-status=no \
                --log-target=journal-or-kmsg --log-level="${SDH_LOG_LEVEL:-info}"
}

# ---- outside ------------------------------------------------------------------------------
sdh__alive() {      # $1 pid, $2 pid namespace it must be in (guards against pid reuse)
        [ -n "$1" ] && grep -qs '^State:[[:space:]]*[^Z]' "/proc/$1/status" &&
                { [ -z "${2:-}" ] || [ "$(readlink "/proc/$1/ns/pid" 2>/dev/null)" = "$2" ]; }
}

sdh__pid1() {
        local dir=$SDH_DIR/socknotify-sdh.$1 p ns
        p=$(cat "$dir/pid1" 2>/dev/null) || return 1
        ns=$(cat "$dir/pidns" 2>/dev/null) || return 1
        sdh__alive "$p" "$ns" && echo "$p"
}

sdh_scale() {
        awk -v s="$1" -v m="${CK_TIMEOUT_MULTIPLIER:-1}" \
                'BEGIN { if (!(m + 0 > 0)) m = 1; t = int(s * m + 0.999); print (t < 1 ? 1 : t) }'
}

sdh_wait() {
        local timeout end
        timeout=$(sdh_scale "$1")
        shift
        end=$(($(date +%s%N) + timeout * 1000000000))
        while ! "$@"; do
                [ "$(date +%s%N)" -lt "$end" ] || return 1
                sleep 0.1
        done
}

sdh_start() {
        local name=$1 dir=$SDH_DIR/socknotify-sdh.$1 cgroot cg up p1="" st own
        local owner=${SDH_OWNER:-$$}
        [ -n "$name" ] || { sdh__die "sdh_start: no name"; return 1; }
        cgroot=$(sdh__cgroot) || { sdh__die "no cgroup2 hierarchy"; return 1; }
        if sdh__pid1 "$name" >/dev/null; then
                sdh__die "instance $name is running already"
                return 1
        fi
        sdh_stop "$name" >/dev/null 2>&1 || true             # what a killed run left
        mkdir -p "$dir"
        : > "$dir/console.log"
        own=$(sed -n 's/^0:://p' /proc/self/cgroup)
        cg=$cgroot/socknotify-sdh.$name
        mkdir "$cg" || return 1
        echo "$cg" > "$dir/cgroup"
        # Enter the new cgroup first, so that it becomes the root of the cgroup namespace.  (In a
        # subshell: the caller's `wait` must not wait for the instance.)
        (
                setsid bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sdh "$cg" \
                        unshare --pid --fork --kill-child=SIGKILL --mount --uts --ipc --net \
                        --cgroup --mount-proc --propagation private -- \
                        bash -c '. "$1"; sdh__boot "$2"' sdh "$SDH_SELF" "$dir" \
                        < /dev/null >> "$dir/console.log" 2>&1 &
                echo $! > "$dir/unshare"
        )
        up=$(cat "$dir/unshare")
        sdh_wait 10 sdh__child_of "$up" "$dir" || {
                sdh__die "instance $name: no PID 1 appeared"
                cat "$dir/console.log" >&2
                return 1
        }
        p1=$(cat "$dir/pid1")
        readlink "/proc/$p1/ns/pid" > "$dir/pidns"
        # A watcher stops the instance if its owner (by default the shell that sourced this
        # file) dies without stopping it, for example killed by a test timeout.
        if [ "$owner" != none ]; then
                (
                        setsid bash -c '. "$1"
                                while kill -0 "$2" 2>/dev/null && [ -e "$3/pid1" ]; do sleep 1; done
                                [ ! -e "$3/pid1" ] || sdh_stop "$4"' \
                                sdh "$SDH_SELF" "$owner" "$dir" "$name" \
                                < /dev/null >> "$dir/console.log" 2>&1 &
                )
        fi
        # unshare itself stays outside the instance's cgroup (systemd cannot see it).
        echo "$up" > "$cgroot$own/cgroup.procs" 2>/dev/null ||
                echo "$up" > "$cgroot/cgroup.procs" || true
        if ! sdh_wait "${SDH_BOOT_TIMEOUT:-60}" test -S "/proc/$p1/root/run/systemd/private"; then
                sdh__die "instance $name: systemd did not come up"
                cat "$dir/console.log" "$dir/kmsg.log" >&2
                return 1
        fi
        st=$(timeout "${SDH_BOOT_TIMEOUT:-60}" nsenter -t "$p1" -m -u -i -n -p -C -- \
                systemctl is-system-running --wait 2>&1) || true
        case $st in
        running | degraded) return 0 ;;
        esac
        sdh__die "instance $name: system state '$st'"
        sdh_exec "$name" systemctl --failed --no-legend >&2 || true
        return 1
}

sdh__child_of() {   # records the first child of $1 (PID 1 of the instance) in $2/pid1
        local c
        c=$(awk '{print $1}' "/proc/$1/task/$1/children" 2>/dev/null) || return 1
        [ -n "$c" ] && echo "$c" > "$2/pid1"
}

sdh_exec() {
        local name=$1 p1
        shift
        p1=$(sdh__pid1 "$name") || { sdh__die "instance $name is not running"; return 125; }
        nsenter -t "$p1" -m -u -i -n -p -C --wd=/ -- \
                env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
                LANG=C.UTF-8 HOME=/root TERM=dumb SYSTEMD_PAGER=cat SYSTEMD_COLORS=0 \
                SYSTEMD_LOG_COLOR=0 "$@"
}

sdh_prop() {
        sdh_exec "$1" systemctl show -P "$3" "$2"
}

sdh__state_is() {
        [ "$(sdh_prop "$1" "$2" ActiveState 2>/dev/null)" = "$3" ]
}

sdh_wait_state() {
        local name=$1 unit=$2 state=$3 timeout=$4
        sdh_wait "$timeout" sdh__state_is "$name" "$unit" "$state" && return 0
        sdh__die "$unit did not reach '$state' in ${timeout}s (it is" \
                "'$(sdh_prop "$name" "$unit" ActiveState 2>/dev/null)')"
}

sdh_journal() {
        local name=$1 unit=$2
        shift 2
        sdh_exec "$name" journalctl --no-pager -o short-unix -u "$unit" "$@"
}

sdh__journal_has() {
        sdh_journal "$1" "$2" 2>/dev/null | grep -Eq -- "$3"
}

sdh_wait_journal() {
        local name=$1 unit=$2 re=$3 timeout=$4
        sdh_wait "$timeout" sdh__journal_has "$name" "$unit" "$re" && return 0
        sdh__die "no line matching /$re/ in the journal of $unit after ${timeout}s"
}

sdh_install() {
        local name=$1 build=${2:-${SN_BUILDDIR:-.}} src=${3:-${SN_SRCDIR:-.}} p1 root f
        p1=$(sdh__pid1 "$name") || { sdh__die "instance $name is not running"; return 1; }
        root=/proc/$p1/root
        [ -x "$build/daemon/socknotifyd" ] || { sdh__die "no $build/daemon/socknotifyd"; return 1; }
        install -D -m 0755 "$build/daemon/socknotifyd" "$root/usr/local/sbin/socknotifyd.new"
        mv -f "$root/usr/local/sbin/socknotifyd.new" "$root/usr/local/sbin/socknotifyd"
        # socknotifyctl (the units' ExecReload=) and the library it links, as `make install`.
        f=$build/ctl/.libs/socknotifyctl
        [ -x "$f" ] || f=$build/ctl/socknotifyctl
        install -D -m 0755 "$f" "$root/usr/local/bin/socknotifyctl.new"
        mv -f "$root/usr/local/bin/socknotifyctl.new" "$root/usr/local/bin/socknotifyctl"
        mkdir -p "$root/usr/local/lib"
        for f in "$build"/client/.libs/libsocknotify.so.*; do
                [ -e "$f" ] && cp -P "$f" "$root/usr/local/lib/"
        done
        for f in system user; do
                local from=$src/systemd to=$root/usr/local/lib/systemd/$f
                [ $f = system ] || from=$src/systemd/user
                mkdir -p "$to"
                sed -e 's|@sbindir[@]|/usr/local/sbin|g' -e 's|@bindir[@]|/usr/local/bin|g' \
                        "$from/socknotifyd.service.in" > "$to/socknotifyd.service"
                cp "$from/socknotifyd.socket" "$to/socknotifyd.socket"
        done
        install -D -m 0644 "$src/systemd/socknotify.sysusers" \
                "$root/usr/local/lib/sysusers.d/socknotify.conf"
        # LeakSanitizer stops the world with ptrace, which the system unit's SystemCallFilter
        # denies: under it a sanitizer build would fail every exit.  Leaks are the other
        # suites' business; here leak checking is off, the rest of ASan and UBSan stays on.
        rm -f "$root/etc/systemd/system/socknotifyd.service.d/sdh-sanitizers.conf"
        if grep -aq __asan_init "$build/daemon/socknotifyd"; then
                mkdir -p "$root/etc/systemd/system/socknotifyd.service.d"
                printf '[Service]\nEnvironment=ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1\n' \
                        > "$root/etc/systemd/system/socknotifyd.service.d/sdh-sanitizers.conf"
                echo "harness: sanitizer build: no leak checks, UBSan stacks in the system unit" >&2
        fi
        sdh_exec "$name" ldconfig && sdh_exec "$name" systemd-sysusers &&
                sdh_exec "$name" systemctl daemon-reload
}

sdh_user_exec() {
        local name=$1 user=$2 uid gid
        shift 2
        uid=$(sdh_exec "$name" id -u "$user") && gid=$(sdh_exec "$name" id -g "$user") || return 1
        sdh_exec "$name" setpriv --reuid="$uid" --regid="$gid" --init-groups \
                env XDG_RUNTIME_DIR="/run/user/$uid" USER="$user" "$@"
}

sdh_user_start() {
        local name=$1 user=$2 uid
        uid=$(sdh_exec "$name" id -u "$user") || return 1
        sdh_exec "$name" timeout 30 systemctl start "user@$uid.service" || return 1
        sdh_wait 30 eval '[ "$(sdh_user_exec "$name" "$user" \
                systemctl --user is-system-running 2>/dev/null)" = running ]' && return 0
        sdh__die "systemd --user of $user did not reach 'running'"
}

sdh_dropin() {
        local name=$1 unit=$2 file=$3 text=$4 p1
        p1=$(sdh__pid1 "$name") || { sdh__die "instance $name is not running"; return 1; }
        mkdir -p "/proc/$p1/root/etc/systemd/system/$unit.d"
        printf '%s\n' "$text" > "/proc/$p1/root/etc/systemd/system/$unit.d/$file.conf"
        sdh_exec "$name" systemctl daemon-reload
}

sdh_stop() {
        local name=$1 dir=$SDH_DIR/socknotify-sdh.$1 p1 ns up cg
        p1=$(cat "$dir/pid1" 2>/dev/null) || p1=""
        ns=$(cat "$dir/pidns" 2>/dev/null) || ns=""
        up=$(cat "$dir/unshare" 2>/dev/null) || up=""
        cg=$(cat "$dir/cgroup" 2>/dev/null) || cg=""
        if [ -n "$ns" ] && sdh__alive "$p1" "$ns"; then
                kill -s SIGRTMIN+4 "$p1" 2>/dev/null || true
                if ! sdh_wait 15 eval '! sdh__alive "$p1" "$ns"'; then
                        echo "harness: $name: no clean poweroff in 15 s, SIGKILL" >&2
                        kill -KILL "$p1" 2>/dev/null || true
                        sdh_wait 10 eval '! sdh__alive "$p1" "$ns"' || true
                fi
        fi
        if [ -n "$up" ] && [ "$(cat "/proc/$up/comm" 2>/dev/null)" = unshare ]; then
                sdh_wait 10 eval '! sdh__alive "$up"' || kill -KILL "$up" 2>/dev/null || true
        fi
        if [ -n "$cg" ] && [ -d "$cg" ]; then
                sdh_wait 10 eval \
                        '[ -z "$(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null)" ]' ||
                        echo "harness: $name: processes left in $cg" >&2
                find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
                if [ -d "$cg" ]; then
                        echo "harness: $name: cgroup $cg not removed" >&2
                        return 1
                fi
        fi
        if [ -n "${SDH_KEEP_LOGS:-}" ]; then
                rm -f "$dir/pid1" "$dir/pidns" "$dir/unshare" "$dir/cgroup"
        else
                rm -rf "$dir"
        fi
        return 0
}

# ---- command line ---------------------------------------------------------------------------
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
        set -u
        SDH_OWNER=${SDH_OWNER:-none}    # an instance started here outlives this command
        cmd=${1:-}
        shift || true
        case $cmd in
        start) sdh_prereq >&2 || exit $?; sdh_start "$@" ;;
        install) sdh_install "$@" ;;
        exec) sdh_exec "$@" ;;
        stop) sdh_stop "$@" ;;
        *) sed -n '2,/^$/p' "$SDH_SELF" | sed 's/^# \{0,1\}//'; exit 2 ;;
        esac
fi
