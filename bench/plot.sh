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
# the dequeue batch size).
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
