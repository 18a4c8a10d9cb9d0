"""Ctrl-C during ``memcore sweep`` on a process pool: the command ends at once with status 130
and one line on stderr, and no worker process is left behind."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGINT are POSIX")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ctrl_c_stops_the_sweep_and_its_workers(tmp_path):
    # a random flat problem whose heuristics stay above its lower bound: each variant (a copy:
    # distinct content, planned anew) searches offsets for its whole time limit, 1 s; 30 copies
    # keep two workers busy for 15 s
    rng = np.random.default_rng(0)
    lower = rng.integers(0, 2000, 3000)
    rows = "".join(f"{i},{lo},{lo + d},{s}\n" for i, (lo, d, s) in
                   enumerate(zip(lower, rng.integers(1, 200, 3000), rng.integers(1, 1 << 16, 3000))))
    models = []
    for k in range(30):
        path = tmp_path / f"p{k}.csv"
        path.write_text(f"id,lower,upper,size\n{rows}" + ("" if k == 0 else f"{10_000 + k},0,1,{k}\n"))
        models.append(str(path))
    proc = subprocess.Popen([sys.executable, "-m", "memcore_py", "sweep", *models, "--mode", "arena", "--time-limit",
                             "1", "--jobs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            cwd=tmp_path)
    time.sleep(3.0)  # the pool's workers are planning
    assert proc.poll() is None, proc.communicate()
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - t0 < 10
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["memcore sweep: error: interrupted"]
    deadline = time.monotonic() + 5
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _group_alive(proc.pid), "worker processes outlived the sweep"
