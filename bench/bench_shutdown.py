"""Benchmark of kernel shutdown: how long a busy kernel takes to end, and what it leaves.

Run from the repository root::

    .venv/bin/python bench/bench_shutdown.py [--rounds 3] [--restart]

Each round starts a real kernel (jupyter_client), runs two monitored streams (one with a
Python UDF, so the JVM has Python workers) and a playing replay panel, then shuts it down
the way Jupyter does (``KernelManager.shutdown_kernel()``, or ``restart_kernel()`` with
``--restart``, default ``shutdown_wait_time`` of 5 s: the manager terminates the kernel
after 2.5 s and kills it after 5 s). Printed side by side per round: the kernel's own
shutdown phases (stopping the streams, ending Spark, removing folders; read from the
workbench's log), the time from the request to the kernel's exit seen from outside, its
exit code (0: exited by itself; negative: ended by a signal), and whatever outlived it
(the JVM or Python workers, the temp folder, Spark's scratch folder).

``--without-magics`` runs the same workload in kernels that never load the magics (the
streams started with ``workbench.start``), as most course notebooks are, in two arms side
by side, round by round: as shipped (the facade's first call hooks the kernel's shutdown)
and unhooked (ipykernel's own ``do_shutdown`` put back, as such kernels had it before: the
workbench then ends at exit, after ipykernel has signalled the JVM).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers import alive, family_of  # noqa: E402
from tests.kernels import Kernel, start_busy  # noqa: E402

#: With --debug: where the interpreter spends its last moments, every thread's stack every 0.3 s.
STACKS = """\
import atexit, faulthandler, time
_stacks = open({stacks!r}, 'w')
atexit.register(lambda: (_stacks.write(f'{time.time():.3f} atexit\\n'), _stacks.flush(),
                         faulthandler.dump_traceback_later(0.3, repeat=True, file=_stacks)))
"""

#: Puts ipykernel's own shutdown back (the `unhooked` arm of --without-magics).
UNHOOK = "_k = get_ipython().kernel\n_k.do_shutdown = type(_k).do_shutdown.__get__(_k)\n"

PHASES = re.compile(r"shutdown took ([\d.]+) s \(streams ([\d.]+) s, Spark ([\d.]+) s, folders ([\d.]+) s\)")


def one_round(home: Path, restart: bool, debug: bool = False, magics: bool = True, unhooked: bool = False) -> dict:
    log = home / "workbench.log"
    kernel = Kernel.start(home)
    manager = kernel.manager
    try:
        if debug:
            kernel.run(STACKS.replace("{stacks!r}", repr(str(log) + ".stacks")))
        facts = start_busy(kernel, log, level="DEBUG" if debug else "INFO", magics=magics)
        if unhooked:
            kernel.run(UNHOOK)
        process = manager.provisioner.process
        family = family_of(process.pid)
        began = time.monotonic()
        asked = time.time()
        if restart:
            manager.restart_kernel()
        else:
            manager.shutdown_kernel()
        seen = time.monotonic() - began
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in family) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [name for pid, name in family.items() if alive(pid)]
        # The folders go in a detached `rm -rf` started just before the kernel exits.
        while any(Path(facts[what]).exists() for what in ("temp_dir", "scratch")) and time.monotonic() < deadline:
            time.sleep(0.1)
        left += [what for what in ("temp_dir", "scratch") if Path(facts[what]).exists()]
        match = PHASES.search(log.read_text()) if log.exists() else None
        phases = dict(zip(("total", "streams", "spark", "folders"), map(float, match.groups()))) if match else {}
        if debug:  # the kernel's log, in seconds since the request
            for line in log.read_text().splitlines():
                stamp, _, rest = line.partition(" ")
                try:
                    print(f"    {float(stamp) - asked:+7.2f} s  {rest}")
                except ValueError:
                    print(f"             {line}")
            stacks = Path(str(log) + ".stacks")
            if stacks.exists():
                print(stacks.read_text())
        return {"phases": phases, "seen": seen, "code": process.returncode, "left": left}
    finally:
        kernel.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="kernels started and shut down, one after another")
    parser.add_argument("--restart", action="store_true", help="restart the kernel instead of shutting it down")
    parser.add_argument("--debug", action="store_true", help="print the kernel's workbench log of each shutdown")
    parser.add_argument("--without-magics", action="store_true",
                        help="kernels that never load the magics, as shipped and unhooked, side by side")
    args = parser.parse_args()
    arms = {"no magics": {"magics": False}, "unhooked": {"magics": False, "unhooked": True}} \
        if args.without_magics else {"magics": {}}
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'arm':>9} {'round':>5} {'streams s':>9} {'Spark s':>8} {'folders s':>9} {'in kernel s':>11} "
          f"{'request->exit s':>15} {'exit':>5}  left behind")
    rows: dict[str, list[dict]] = {arm: [] for arm in arms}
    with tempfile.TemporaryDirectory(prefix="bench-shutdown-") as root:
        for n in range(1, args.rounds + 1):
            for arm, options in arms.items():
                row = one_round(Path(root) / f"round-{n}-{arm.replace(' ', '-')}", args.restart, args.debug, **options)
                rows[arm].append(row)
                p = row["phases"]
                print(f"{arm:>9} {n:>5} {p.get('streams', float('nan')):>9.2f} {p.get('spark', float('nan')):>8.2f} "
                      f"{p.get('folders', float('nan')):>9.2f} {p.get('total', float('nan')):>11.2f} "
                      f"{row['seen']:>15.2f} {row['code']:>5}  {', '.join(row['left']) or 'nothing'}", flush=True)
    clean_everywhere = True
    for arm, done in rows.items():
        seen = [row["seen"] for row in done]
        clean = sum(row["code"] == 0 and not row["left"] for row in done)
        clean_everywhere &= clean == len(done) or arm == "unhooked"
        print(f"{arm}: request->exit median {statistics.median(seen):.2f} s, max {max(seen):.2f} s; "
              f"{clean}/{len(done)} rounds exited by themselves and left nothing")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    sys.exit(0 if clean_everywhere else 1)


if __name__ == "__main__":
    main()
