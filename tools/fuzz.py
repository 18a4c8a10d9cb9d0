#!/usr/bin/env python
"""Long fuzzing campaigns: the invariants of ``memcore_py.testing.fuzzing``,
``memcore_py.testing.fuzz_files`` and ``memcore_py.testing.fuzz_bridge`` over fresh seeds.

Usage::

    python tools/fuzz.py --target text --inputs 100000 --workers 2 --out fuzz-out
    python tools/fuzz.py --target kernel --inputs 100000 --start-seed 1000000
    python tools/fuzz.py --target cli --inputs 5000
    python tools/fuzz.py --target csv --inputs 100000 --workers 1
    python tools/fuzz.py --target bridge --inputs 20000 --workers 1

Targets: ``text`` (parser, printer, passes), ``kernel`` (engine kernels), ``cli`` (``memcore
check|fmt|plan`` on TVMScript), ``onnx`` / ``graph-json`` / ``csv`` (mutated files through the
importers, the planners and ``memcore plan``; :mod:`memcore_py.testing.fuzz_files`) and
``bridge`` (modules TVM accepts through ``from_tvm`` / ``to_tvm``, the native passes, TVM's
passes and memcore's text path; :mod:`memcore_py.testing.fuzz_bridge`).

Design
------
A supervisor hands seeds to ``--workers`` worker processes and reads one message per input
back, each worker through its own pipe (so that a worker dying mid-message blocks no other).
Each worker runs with an address-space limit (``--memory-mb``, RLIMIT_AS) and a per-input
alarm (``--timeout`` seconds: SIGALRM turns a Python-level hang into a recorded
``hang``); the supervisor also kills and restarts a worker that is silent for twice the
timeout (a hang in compiled code) or that dies (a crash: segfault, abort, OOM kill), and
records the seed it was on (the seeds fed to it and not started run again, on a new worker).
Violations (an invariant broken: untyped exception, round-trip
failure, ill-formed pass output, verifier refusing a kernel result, a CLI traceback, an
unlisted difference from TVM) are minimised after the run (text and files: delta debugging
over lines, then characters, keeping the same violation kind, for files and bridge modules
the same :func:`_signature`; a bridge input is minimised on its TVMScript, kept only while
TVM's parser accepts it; kernel calls: the seed is the reproducer), one per distinct
violation (:func:`_signature`), and written to
``OUT/failures/`` with the unminimised input. ``OUT/summary.json`` and ``OUT/summary.md``
hold the counts (inputs, parsed or imported, well-formed or planned, violations by kind,
hangs, crashes; for the bridge the construction of the inputs and the DIFFERENCES.md entries
met), the throughput and the command line.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import multiprocessing.connection
import os
import re
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


def _worker(target, seeds_q, results, timeout, memory_mb):
    if memory_mb:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _on_alarm)
    from memcore_py.testing import fuzzing

    corpus = _PRELOADED.get(target) or _corpus(target)
    while True:
        seed = seeds_q.get()
        if seed is None:
            return
        results.send(("start", seed))
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
        results.send(("done", seed, status, problem, info))


FILE_TARGETS = ("onnx", "graph-json", "csv")
TARGETS = ("text", "kernel", "cli", "bridge") + FILE_TARGETS
#: What a worker sends back about an input (small values only: the queue pickles them).
INFO_KEYS = ("kernel", "parsed", "well_formed", "imported", "planned", "read", "listed", "refused", "how",
             "generator", "cli_violation")


#: Corpora built by the supervisor before it starts workers (:func:`_preload`).
_PRELOADED: dict = {}


def _preload(target) -> None:
    """For the file targets, import the importers and build the corpus in the supervisor, so
    that a worker restarted after a crash (forked) starts at once: an input that aborts the
    process costs a restart, and some targets have hundreds. (Not for TVM: its thread pool
    does not survive a fork.)"""
    if target in FILE_TARGETS and mp.get_start_method() == "fork":
        from memcore_py.cli import plan  # noqa: F401
        from memcore_py.frontend import onnx_model  # noqa: F401

        _PRELOADED[target] = _corpus(target)


def _corpus(target):
    if target in ("text", "cli"):
        from memcore_py.testing import fuzzing

        return fuzzing.default_corpus()
    if target in FILE_TARGETS:
        from memcore_py.testing import fuzz_files

        return fuzz_files.file_corpus(target)
    return None


def file_input(target: str, corpus, seed: int):
    """``(data, suffix, memcore plan options)`` of a file target's input ``seed``."""
    from memcore_py.testing import fuzz_files

    return fuzz_files.fuzz_input(target, corpus, seed)


def _cli_main():
    from memcore_py.cli import main

    return main


def _run_one(fuzzing, target, corpus, seed, info):
    out = {}
    try:
        return _run_target(fuzzing, target, corpus, seed, out)
    finally:
        info.update({k: v for k, v in out.items() if k in INFO_KEYS})


def _run_target(fuzzing, target, corpus, seed, info):
    if target in FILE_TARGETS:
        from memcore_py.testing import fuzz_files

        data, suffix, extra = file_input(target, corpus, seed)
        return fuzz_files.check_file(target, data, suffix, extra, info, cli_main=_cli_main())
    if target == "bridge":
        from memcore_py.testing import fuzz_bridge

        m = fuzz_bridge.bridge_input(seed, info)
        return m if isinstance(m, str) else fuzz_bridge.check_bridge(m, info)
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


def _start(target, seeds_q, results, args):
    p = mp.Process(target=_worker, args=(target, seeds_q, results, args.timeout, args.memory_mb), daemon=True)
    p.start()
    return p


class _Worker:
    """One worker process as the supervisor sees it: its seed queue, the read end of its own
    results pipe (a worker that dies cannot leave a shared lock held), the seeds fed to it
    and not yet done (``assigned``, in order) and the one it started (``current``)."""

    def __init__(self, args):
        self.q = mp.Queue()
        self.conn, child_end = mp.Pipe(duplex=False)
        self.proc = _start(args.target, self.q, child_end, args)
        child_end.close()
        self.assigned: list = []
        self.current = None
        self.since = time.perf_counter()

    def messages(self) -> tuple:
        """``(messages ready, whether the worker's pipe is closed)``."""
        out = []
        try:
            while self.conn.poll():
                out.append(self.conn.recv())
        except (EOFError, OSError):
            return out, True
        return out, False

    def stop(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(1)
        self.conn.close()


def run_campaign(args) -> dict:
    seeds = list(range(args.start_seed, args.start_seed + args.inputs))
    counts = {"inputs": 0, "ok": 0, "violation": 0, "hang": 0, "crash": 0, "parsed": 0, "well_formed": 0,
              "imported": 0, "planned": 0}
    kernels: dict = {}
    tallies: dict = {"listed": {}, "refused": {}, "how": {}, "violation kinds": {}}
    failures = []
    workers: list = []
    next_seed = 0
    t0 = time.perf_counter()

    def feed(w):
        nonlocal next_seed
        while len(w.assigned) < 4 and next_seed < len(seeds):
            w.q.put(seeds[next_seed])
            w.assigned.append(seeds[next_seed])
            next_seed += 1

    def record(seed, status, problem, info):
        counts["inputs"] += 1
        counts[status] += 1
        counts["parsed"] += bool(info.get("parsed"))
        counts["well_formed"] += bool(info.get("well_formed"))
        counts["imported"] += bool(info.get("imported") or info.get("read"))
        counts["planned"] += bool(info.get("planned"))
        if "kernel" in info:
            kernels[info["kernel"]] = kernels.get(info["kernel"], 0) + 1
        _tally(tallies, info, problem if status == "violation" else None)
        if status != "ok":
            failures.append({"seed": seed, "status": status, "problem": problem})

    _preload(args.target)
    for _ in range(args.workers):
        workers.append(_Worker(args))
        feed(workers[-1])
    reported = 0
    while counts["inputs"] < args.inputs:  # each seed is recorded once: done, crash or hang
        mp.connection.wait([w.conn for w in workers], timeout=0.5)
        now = time.perf_counter()
        for k, w in enumerate(workers):
            msgs, closed = w.messages()
            for msg in msgs:
                w.since = now
                if msg[0] == "start":
                    w.current = msg[1]
                    continue
                _, seed, status, problem, info = msg
                record(seed, status, problem, info)
                w.current = None
                w.assigned.remove(seed)
                feed(w)
            # supervision: a dead worker, one silent on an input, one that never starts
            dead = closed or not w.proc.is_alive()
            silent = w.current is not None and now - w.since > 2 * args.timeout
            stuck = w.current is None and w.assigned and now - w.since > 2 * args.timeout + 60
            if dead or silent or stuck:
                w.stop()
                if w.current is not None:
                    status = "crash" if dead else "hang"
                    code = w.proc.exitcode
                    record(w.current, status, f"worker {'died (exit code %s)' % code if dead else 'silent'}", {})
                    w.assigned.remove(w.current)
                seeds.extend(w.assigned)  # fed but not started: run them again, at the end
                workers[k] = _Worker(args)
                feed(workers[k])
        if args.progress and counts["inputs"] >= reported + args.progress:
            reported = counts["inputs"] - counts["inputs"] % args.progress
            print(f"  {counts['inputs']}/{args.inputs} inputs, {len(failures)} failures, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    for w in workers:
        w.q.put(None)
    for w in workers:
        w.proc.join(5)
        w.stop()
    seconds = time.perf_counter() - t0
    return {"target": args.target, "counts": counts, "kernels": kernels, "tallies": tallies,
            "seconds": round(seconds, 1),
            "inputs_per_second": round(counts["inputs"] / seconds, 1), "failures": failures,
            "start_seed": args.start_seed, "workers": args.workers, "timeout": args.timeout,
            "memory_mb": args.memory_mb, "command": " ".join(["python", "tools/fuzz.py"] + sys.argv[1:])}


def _tally(tallies: dict, info: dict, problem) -> None:
    """Count the bridge's listed differences, typed refusals and input constructions, and
    the violations by kind."""
    for name in info.get("listed", ()):
        tallies["listed"][name] = tallies["listed"].get(name, 0) + 1
    for name in info.get("refused", ()):
        tallies["refused"][name] = tallies["refused"].get(name, 0) + 1
    if "how" in info:
        key = f"{info.get('generator')} {info['how']}"
        tallies["how"][key] = tallies["how"].get(key, 0) + 1
    if problem:
        for part in problem.split(" | "):
            kind = _kind(part)
            tallies["violation kinds"][kind] = tallies["violation kinds"].get(kind, 0) + 1


def _signature(problem: str) -> str:
    """A violation without its numbers, paths and quoted names, an untyped exception
    without its message: one minimisation per signature."""
    parts = []
    for part in problem.split(" | "):
        untyped = re.match(r"(untyped: .*? raised \w+)", part)
        text = untyped.group(1) if untyped else part
        text = re.sub(r"/[^\s:'\"]+", "PATH", text)
        text = re.sub(r"'[^']*'|\"[^\"]*\"", "Q", text)
        parts.append(re.sub(r"0x[0-9a-fA-F]+|\d+", "N", text)[:100])
    return " | ".join(parts)


# ------------------------------------------------------------------------------ minimisation
def _kind(problem: str | None) -> str | None:
    return None if problem is None else problem.split(":")[0]


def minimise_text(text: str, check, budget: float = 60.0, key=None) -> str:
    """Delta debugging (lines, then characters) keeping ``key`` of ``check``'s violation
    (default: its kind)."""
    key = key or _kind
    want = key(_guarded(check, text))
    deadline = time.perf_counter() + budget

    def still(t):
        return time.perf_counter() < deadline and key(_guarded(check, t)) == want

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


def _guarded(check, value, timeout: float = 20.0):
    """``check(value)`` under an alarm; a check that raises or runs out of time counts as a
    different violation (so minimisation never stalls or stops on a candidate)."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return check(value)
    except (_Timeout, Exception) as exc:  # noqa: BLE001
        return f"minimisation: the check raised {type(exc).__name__}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def minimise_bytes(data: bytes, check, budget: float = 60.0, key=None) -> bytes:
    """:func:`minimise_text` on bytes (each byte one Latin-1 character)."""
    small = minimise_text(data.decode("latin-1"), lambda t: check(t.encode("latin-1")), budget, key)
    return small.encode("latin-1")


def _signature_of(problem):
    return None if problem is None else _signature(problem)


def _bridge_text_check(text: str):
    """The bridge invariants on TVM's parse of ``text``; None when TVM refuses it."""
    from memcore_py.testing import fuzz_bridge

    m = fuzz_bridge._from_source(text)
    return None if m is None else fuzz_bridge.check_bridge(m)


def minimise_failures(args, summary: dict, out: Path, limit: int = 10) -> None:
    """Minimise one failure per violation signature (at most ``limit``) into
    ``out/failures/``, with the unminimised input beside it."""
    from memcore_py.testing import fuzzing

    fdir = out / "failures"
    fdir.mkdir(parents=True, exist_ok=True)
    corpus = _corpus(args.target)
    seen: set = set()
    for f in summary["failures"]:
        if f["status"] != "violation" or len(seen) >= limit:
            continue
        sig = _signature(f["problem"])
        if sig in seen:
            f["minimised"] = "same signature as an earlier failure"
            continue
        seen.add(sig)
        seed = f["seed"]
        if args.target in ("text", "cli"):
            from memcore_py.cli.contract import check_cli

            text = fuzzing.mutate_text(corpus[seed % len(corpus)], seed)
            small = minimise_text(text, fuzzing.check_text if args.target == "text" else check_cli)
            (fdir / f"seed{seed}.py").write_text(small)
            f["minimised"] = str(fdir / f"seed{seed}.py")
        elif args.target in FILE_TARGETS:
            from memcore_py.testing import fuzz_files

            data, suffix, extra = file_input(args.target, corpus, seed)
            small = minimise_bytes(
                data,
                lambda d, suffix=suffix, extra=extra: fuzz_files.check_file(
                    args.target, d, suffix, extra, cli_main=_cli_main()
                ),
                key=_signature_of,
            )
            (fdir / f"seed{seed}.input{suffix}").write_bytes(data)
            (fdir / f"seed{seed}{suffix}").write_bytes(small)
            f["minimised"] = str(fdir / f"seed{seed}{suffix}")
            f["options"] = " ".join(extra)
        elif args.target == "bridge":
            from memcore_py.testing import fuzz_bridge

            info: dict = {}
            fuzz_bridge.bridge_input(seed, info)
            text = info["text"]
            (fdir / f"seed{seed}.input.py").write_text(text)
            if _bridge_text_check(text) is not None:
                text = minimise_text(text, _bridge_text_check, budget=60.0, key=_signature_of)
            (fdir / f"seed{seed}.py").write_text(text)
            f["minimised"] = str(fdir / f"seed{seed}.py")


def _write(out: Path, summary: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    c = summary["counts"]
    lines = [
        f"# memcore fuzz campaign: {summary['target']}",
        "",
        f"`{summary['command']}`",
        "",
        "| inputs | ok | violations | hangs | crashes | parsed | well-formed | imported | planned | seconds "
        "| inputs/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        f"| {c['inputs']} | {c['ok']} | {c['violation']} | {c['hang']} | {c['crash']} | {c['parsed']} | "
        f"{c['well_formed']} | {c['imported']} | {c['planned']} | {summary['seconds']} | "
        f"{summary['inputs_per_second']} |",
        "",
    ]
    if summary["kernels"]:
        lines.append("Kernel calls: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["kernels"].items())))
        lines.append("")
    for name, tally in summary.get("tallies", {}).items():
        if tally:
            lines.append(f"{name.capitalize()}: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
            lines.append("")
    for f in summary["failures"][:50]:
        extra = f" (minimised: {f['minimised']})" if "minimised" in f else ""
        lines.append(f"- seed {f['seed']}: {f['status']}: {f['problem']}{extra}")
    (out / "summary.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=TARGETS, default="text")
    parser.add_argument("--inputs", type=int, default=10000)
    parser.add_argument("--start-seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2)))
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per input")
    parser.add_argument("--memory-mb", type=int, default=4096, help="address-space limit per worker (0: none)")
    parser.add_argument("--out", default="fuzz-out")
    parser.add_argument("--no-minimise", action="store_true")
    parser.add_argument("--progress", type=int, nargs="?", const=5000, default=0, metavar="N",
                        help="print a progress line to stderr every N inputs (default 5000)")
    args = parser.parse_args(argv)
    out = Path(args.out) / args.target
    summary = run_campaign(args)
    _write(out, summary)  # the counts first: minimisation may take long
    if summary["failures"] and not args.no_minimise and args.target != "kernel":
        minimise_failures(args, summary, out)
        _write(out, summary)
    c = summary["counts"]
    print(f"{args.target}: {c['inputs']} inputs in {summary['seconds']} s ({summary['inputs_per_second']}/s): "
          f"{c['violation']} violations, {c['hang']} hangs, {c['crash']} crashes; summary in {out}/summary.md")
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
