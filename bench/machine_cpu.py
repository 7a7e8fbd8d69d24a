"""The machine's busy CPU time, for the benchmarks that count every process's CPU (kernels, JVMs, Chromium)."""

from __future__ import annotations

import os
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def busy_seconds() -> float:
    """The machine's busy CPU time so far (user, nice, system, irq, softirq, steal), in seconds.

    Steal counts as busy: on a shared virtual machine it is time this machine wanted a core
    and another guest had it.
    """
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / TICK
