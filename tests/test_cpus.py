"""The models size their threads to the CPUs a process may use, not to every CPU of the machine."""

import os
import subprocess
import sys

from assistant.cpus import usable_cpus


def test_a_process_kept_to_one_cpu_counts_one():
    first = min(os.sched_getaffinity(0))
    out = subprocess.run(
        [sys.executable, "-c", "from assistant.cpus import usable_cpus; print(usable_cpus())"],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.sched_setaffinity(0, {first}),  # what taskset -c or a cpuset does
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
    assert usable_cpus() == len(os.sched_getaffinity(0))
