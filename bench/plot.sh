#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The socknotify authors
# bench/plot.sh - the plots of docs/performance.md from a run of socknotify-bench --csv-dir DIR.
#
#   bench/socknotify-bench --csv-dir /tmp/bench > run.json
#   bench/plot.sh /tmp/bench docs
#
# Needs gnuplot (Debian: apt-get install gnuplot-nox).  Writes DIR_OUT/latency.png (round-trip
# time distribution, socknotify and epoll) and DIR_OUT/delivery.png (entries per second against
# the dequeue batch size); when CSV_DIR has scale.csv (--only scale_matrix --csv-dir CSV_DIR),
# DIR_OUT/scale.png too (registration cost and delivery rate against registrations, per number
# of client connections).
set -eu
in=${1:?usage: plot.sh CSV_DIR OUT_DIR}
out=${2:?usage: plot.sh CSV_DIR OUT_DIR}
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not installed (apt-get install gnuplot-nox)" >&2; exit 1; }

gnuplot <<GP
set terminal pngcairo size 900,520 font "DejaVu Sans,11" noenhanced
set output "$out/latency.png"
set title "Round trip through one socket pair: waiter blocked in a dequeue (CDF)"
set xlabel "round-trip time (microseconds, log scale)"
set ylabel "fraction of round trips"
set logscale x
set grid
set key bottom right
plot "$in/latency.csv" using 1:3 with lines lw 2 title "socknotify (sn_port_dequeue)", \
     "$in/latency.csv" using 2:3 with lines lw 2 title "in-process epoll_wait"

set output "$out/delivery.png"
set title "Delivery rate, 1000 readable sockets, level-triggered persistent"
set xlabel "entries per dequeue (batch size, log scale)"
set ylabel "entries per second (log scale)"
set logscale xy
set xtics (1, 16, 256)
set key top left
plot "$in/delivery.csv" using 1:2 with linespoints lw 2 pt 7 title "socknotify", \
     "$in/delivery.csv" using 1:3 with linespoints lw 2 pt 5 title "in-process epoll_wait"
GP
echo "wrote $out/latency.png $out/delivery.png"

[ -f "$in/scale.csv" ] || exit 0
# scale.csv: N C register_us register_daemon_cpu_us register_epoll_us delivery baseline ...
gnuplot <<GP
set terminal pngcairo size 1100,460 font "DejaVu Sans,11" noenhanced
set output "$out/scale.png"
set multiplot layout 1,2
set grid
set xlabel "registrations held by the daemon"
set title "Daemon CPU time per registration"
set ylabel "microseconds"
set yrange [0:*]
set key bottom right
plot for [c in "1 10 100"] "$in/scale.csv" using 1:(\$2 == c ? \$4 : 1/0) \
     with linespoints lw 2 pt 7 title c." connection(s)"
set title "Delivery, 1000 active sockets, batch 256 (log scale)"
set ylabel "entries per second"
set logscale y
set yrange [*:*]
set key below
plot for [c in "1 10 100"] "$in/scale.csv" using 1:(\$2 == c ? \$6 : 1/0) \
     with linespoints lw 2 pt 7 title "socknotify, ".c." conn.", \
     for [c in "1 10 100"] "$in/scale.csv" using 1:(\$2 == c ? \$7 : 1/0) \
     with linespoints lw 1 dt 2 pt 5 title "epoll, ".c." thread(s)"
unset multiplot
GP
echo "wrote $out/scale.png"
