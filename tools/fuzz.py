#!/usr/bin/env python
"""Long fuzzing campaigns: the invariants of ``memcore_py.testing.fuzzing`` over fresh seeds.

Usage::

    python tools/fuzz.py --target text --inputs 100000 --workers 2 --out fuzz-out
    python tools/fuzz.py --target kernel --inputs 100000 --start-seed 1000000
    python tools/fuzz.py --target cli --inputs 5000

Design
------
A supervisor hands seeds to ``--workers`` worker processes and reads one message per input
back. Each worker runs with an address-space limit (``--memory-mb``, RLIMIT_AS) and a
per-input alarm (``--timeout`` seconds: SIGALRM turns a Python-level hang into a recorded
``hang``); the supervisor also kills and restarts a worker that is silent for twice the
timeout (a hang in compiled code) or that dies (a crash: segfault, abort, OOM kill), and
records the seed it was on. Violations (an invariant broken: untyped exception, round-trip
failure, ill-formed pass output, verifier refusing a kernel result, a CLI traceback) are
minimised in a fresh process (text: delta debugging over lines, then characters, keeping
the same violation kind; kernel calls: the seed is the reproducer) and written to
``OUT/failures/``. ``OUT/summary.json`` and ``OUT/summary.md`` hold the counts (inputs,
parsed, well-formed, typed refusals, violations, hangs, crashes), the throughput and the
command line.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import resource
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class _Timeout(BaseException):
    pass


def _on_alarm(signum, frame):
    raise _Timeout()


def _worker(target, seeds_q, results_q, timeout, memory_mb):
    if memory_mb:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _on_alarm)
    from memcore_py.testing import fuzzing

    corpus = fuzzing.default_corpus() if target in ("text", "cli") else None
    while True:
        seed = seeds_q.get()
        if seed is None:
            return
        results_q.put(("start", seed, os.getpid()))
        info = {}
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            problem = _run_one(fuzzing, target, corpus, seed, info)
            status = "violation" if problem else "ok"
        except _Timeout:
            problem, status = f"no result within {timeout} s", "hang"
        except MemoryError:
            problem, status = f"MemoryError under the {memory_mb} MB limit", "crash"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        results_q.put(("done", seed, status, problem, info))


def _run_one(fuzzing, target, corpus, seed, info):
    if target == "kernel":
        name, args, kwargs = fuzzing.kernel_call(seed)
        info["kernel"] = name
        return fuzzing.check_kernel(name, args, kwargs)
    text = fuzzing.mutate_text(corpus[seed % len(corpus)], seed)
    if target == "cli":
        command = ("check", "fmt", "plan")[seed % 3]
        from memcore_py.cli.contract import check_cli

        return check_cli(text, command, ("--no-search",) if command == "plan" else ())
    from memcore_py import parse
    from memcore_py.ir import well_formed

    try:
        mod = parse(text)
        info["parsed"] = True
        info["well_formed"] = bool(well_formed(mod))
    except Exception:  # noqa: BLE001 - check_text judges it
        pass
    return fuzzing.check_text(text)


def _start(target, seeds_q, results_q, args):
    p = mp.Process(target=_worker, args=(target, seeds_q, results_q, args.timeout, args.memory_mb), daemon=True)
    p.start()
    return p


def run_campaign(args) -> dict:
    ctx_q = mp.Queue
    results_q = ctx_q()
    seeds = list(range(args.start_seed, args.start_seed + args.inputs))
    counts = {"inputs": 0, "ok": 0, "violation": 0, "hang": 0, "crash": 0, "parsed": 0, "well_formed": 0}
    kernels: dict = {}
    failures = []
    workers = {}
    next_seed = 0
    t0 = time.perf_counter()

    def launch():
        q = ctx_q()
        p = _start(args.target, q, results_q, args)
        workers[p.pid] = {"proc": p, "q": q, "seed": None, "since": time.perf_counter(), "pending": 0}
        return p.pid

    def feed(pid):
        nonlocal next_seed
        w = workers[pid]
        while w["pending"] < 4 and next_seed < len(seeds):
            w["q"].put(seeds[next_seed])
            next_seed += 1
            w["pending"] += 1

    for _ in range(args.workers):
        feed(launch())
    done = 0
    while done < len(seeds):
        try:
            msg = results_q.get(timeout=0.5)
        except queue.Empty:
            msg = None
        now = time.perf_counter()
        if msg is not None:
            if msg[0] == "start":
                _, seed, pid = msg
                if pid in workers:
                    workers[pid]["seed"], workers[pid]["since"] = seed, now
                continue
            _, seed, status, problem, info = msg
            done += 1
            counts["inputs"] += 1
            counts[status] += 1
            counts["parsed"] += bool(info.get("parsed"))
            counts["well_formed"] += bool(info.get("well_formed"))
            if "kernel" in info:
                kernels[info["kernel"]] = kernels.get(info["kernel"], 0) + 1
            if status != "ok":
                failures.append({"seed": seed, "status": status, "problem": problem})
            for pid, w in workers.items():
                if w["seed"] == seed:
                    w["seed"] = None
                    w["pending"] -= 1
                    feed(pid)
                    break
        # supervision: dead or silent workers
        for pid in list(workers):
            w = workers[pid]
            dead = not w["proc"].is_alive()
            silent = w["seed"] is not None and now - w["since"] > 2 * args.timeout
            if dead or silent:
                if w["proc"].is_alive():
                    w["proc"].kill()
                w["proc"].join(1)
                if w["seed"] is not None:
                    status = "crash" if dead else "hang"
                    code = w["proc"].exitcode
                    failures.append({"seed": w["seed"], "status": status,
                                     "problem": f"worker {'died (exit code %s)' % code if dead else 'silent'}"})
                    counts["inputs"] += 1
                    counts[status] += 1
                    done += 1
                # seeds queued to the dead worker are lost: put them back at the end
                lost = []
                while True:
                    try:
                        s = w["q"].get_nowait()
                    except Exception:  # noqa: BLE001
                        break
                    if s is not None:
                        lost.append(s)
                seeds.extend(lost)
                del workers[pid]
                feed(launch())
        if args.progress and done and done % 5000 == 0:
            print(f"  {done}/{len(seeds)} inputs, {len(failures)} failures", file=sys.stderr, flush=True)
    for w in workers.values():
        w["q"].put(None)
    for w in workers.values():
        w["proc"].join(5)
        if w["proc"].is_alive():
            w["proc"].kill()
    seconds = time.perf_counter() - t0
    return {"target": args.target, "counts": counts, "kernels": kernels, "seconds": round(seconds, 1),
            "inputs_per_second": round(counts["inputs"] / seconds, 1), "failures": failures,
            "start_seed": args.start_seed, "workers": args.workers, "timeout": args.timeout,
            "memory_mb": args.memory_mb, "command": " ".join(["python", "tools/fuzz.py"] + sys.argv[1:])}


# ------------------------------------------------------------------------------ minimisation
def _kind(problem: str | None) -> str | None:
    return None if problem is None else problem.split(":")[0]


def minimise_text(text: str, check, budget: float = 60.0) -> str:
    """Delta debugging (lines, then characters) keeping ``check``'s violation kind."""
    want = _kind(check(text))
    deadline = time.perf_counter() + budget

    def still(t):
        return time.perf_counter() < deadline and _kind(check(t)) == want

    for unit in ("\n", None):
        parts = text.split("\n") if unit else list(text)
        joiner = "\n" if unit else ""
        n = 2
        while len(parts) >= 2 and time.perf_counter() < deadline:
            chunk = max(1, len(parts) // n)
            removed = False
            for i in range(0, len(parts), chunk):
                trial = parts[:i] + parts[i + chunk:]
                if trial and still(joiner.join(trial)):
                    parts, n, removed = trial, max(n - 1, 2), True
                    break
            if not removed:
                if chunk == 1:
                    break
                n = min(len(parts), n * 2)
        text = joiner.join(parts)
    return text


def _write(out: Path, summary: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    c = summary["counts"]
    lines = [
        f"# memcore fuzz campaign: {summary['target']}",
        "",
        f"`{summary['command']}`",
        "",
        "| inputs | ok | violations | hangs | crashes | parsed | well-formed | seconds | inputs/s |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {c['inputs']} | {c['ok']} | {c['violation']} | {c['hang']} | {c['crash']} | {c['parsed']} | "
        f"{c['well_formed']} | {summary['seconds']} | {summary['inputs_per_second']} |",
        "",
    ]
    if summary["kernels"]:
        lines.append("Kernel calls: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["kernels"].items())))
        lines.append("")
    for f in summary["failures"][:50]:
        lines.append(f"- seed {f['seed']}: {f['status']}: {f['problem']}")
    (out / "summary.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=("text", "kernel", "cli"), default="text")
    parser.add_argument("--inputs", type=int, default=10000)
    parser.add_argument("--start-seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2)))
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per input")
    parser.add_argument("--memory-mb", type=int, default=4096, help="address-space limit per worker (0: none)")
    parser.add_argument("--out", default="fuzz-out")
    parser.add_argument("--no-minimise", action="store_true")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out) / args.target
    summary = run_campaign(args)
    if summary["failures"] and not args.no_minimise and args.target in ("text", "cli"):
        from memcore_py.testing import fuzzing

        corpus = fuzzing.default_corpus()
        fdir = out / "failures"
        fdir.mkdir(parents=True, exist_ok=True)
        for f in summary["failures"][:20]:
            if f["status"] != "violation":
                continue
            text = fuzzing.mutate_text(corpus[f["seed"] % len(corpus)], f["seed"])
            from memcore_py.cli.contract import check_cli

            small = minimise_text(text, fuzzing.check_text if args.target == "text" else check_cli)
            (fdir / f"seed{f['seed']}.py").write_text(small)
            f["minimised"] = str(fdir / f"seed{f['seed']}.py")
    _write(out, summary)
    c = summary["counts"]
    print(f"{args.target}: {c['inputs']} inputs in {summary['seconds']} s ({summary['inputs_per_second']}/s): "
          f"{c['violation']} violations, {c['hang']} hangs, {c['crash']} crashes; summary in {out}/summary.md")
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
