"""Same-run A/B timing of StaticPlanBlockMemory and KillAfterLastUse in two source trees.

Usage::

    git worktree add ../base <commit> && (cd ../base && python setup.py build_ext --inplace)
    python tools/ab_passes.py ../base . --rounds 3            # chains and shipped models

Each round runs one worker process per tree (alternating which goes first), with
``PYTHONPATH`` set to that tree; a worker times each workload as the minimum over a few
calls. The table gives the minimum over rounds and the ratio new/base. Workloads: the
``chain_module`` chains of 3k / 30k / 300k bindings (``bench/_passes_common.py``'s sizes) and
the real models shipped in ``memcore_py/examples/models``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def _best(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _worker(groups):
    import memcore_py
    from memcore_py.examples.models import list_models, model_text
    from memcore_py.testing.memory_programs import chain_module
    from memcore_py.transform import KillAfterLastUse, LowerAllocTensor, StaticPlanBlockMemory

    def measure(label, mod, reps):
        out[f"spbm_tvm_{label}"] = _best(lambda: StaticPlanBlockMemory()(mod), reps)
        out[f"spbm_arena_{label}"] = _best(lambda: StaticPlanBlockMemory(mode="arena")(mod), max(3, reps // 2))
        lowered = LowerAllocTensor()(StaticPlanBlockMemory()(mod))
        out[f"kill_{label}"] = _best(lambda: KillAfterLastUse()(lowered), reps)

    out = {}
    if "chains" in groups:
        for n_ops, reps in ((1_000, 15), (10_000, 7), (100_000, 3)):
            measure(str(3 * n_ops), chain_module(n_ops), reps)
    if "models" in groups:
        for name in list_models():
            measure(name, memcore_py.parse(model_text(name)), 9)
    print(json.dumps(out))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", choices=("chains", "models"), action="append")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    groups = args.only or ["chains", "models"]
    if args.worker:
        _worker(groups)
        return 0
    trees = [os.path.abspath(args.base), os.path.abspath(args.new)]
    best: dict = {t: {} for t in trees}
    for r in range(args.rounds):
        for tree in (trees if r % 2 == 0 else trees[::-1]):
            cmd = [sys.executable, os.path.abspath(__file__), tree, tree, "--worker"]
            for g in groups:
                cmd += ["--only", g]
            proc = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=tree), cwd="/", capture_output=True, text=True)
            if proc.returncode:
                sys.stderr.write(proc.stderr)
                return 1
            for key, value in json.loads(proc.stdout.strip().splitlines()[-1]).items():
                best[tree][key] = min(value, best[tree].get(key, float("inf")))
    base, new = best[trees[0]], best[trees[1]]
    print(f"{'workload':26s} {'base ms':>9s} {'new ms':>9s} {'new/base':>8s}")
    for key in base:
        print(f"{key:26s} {base[key] * 1e3:9.2f} {new[key] * 1e3:9.2f} {new[key] / base[key]:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
