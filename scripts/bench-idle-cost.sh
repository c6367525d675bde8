#!/usr/bin/env bash
# The daemon's idle cost in BENCHMARKS.md ("Idle cost"): a daemon listening to silence (the test
# suite's fake microphone plays 16 kHz silence in real time), its CPU time read from
# /proc/PID/stat over 60 s after a 20 s warm-up. Run from the repository root after set-up.
set -euo pipefail
rm -rf /tmp/idle && mkdir -p /tmp/idle/mic /tmp/idle/run && chmod 700 /tmp/idle/run
printf 'paths:\n  data_dir: /tmp/idle/data\ndaemon:\n  socket: /tmp/idle/run/api.sock\n' > /tmp/idle/config.yaml
PYTHONPATH=tests/fake_microphone ASSISTANT_FAKE_MIC=/tmp/idle/mic \
  .venv/bin/python -m assistant --config /tmp/idle/config.yaml daemon 2> /tmp/idle/daemon.log &
pid=$!
until [ -S /tmp/idle/run/api.sock ]; do sleep 1; done; sleep 20   # models loaded, then a warm-up
cpu() { awk '{print $14 + $15}' /proc/$pid/stat; }                 # utime + stime, in clock ticks
a=$(cpu); sleep 60; b=$(cpu)
echo "CPU-seconds in 60 s: $(echo "scale=2; ($b - $a) / $(getconf CLK_TCK)" | bc)"
kill $pid
