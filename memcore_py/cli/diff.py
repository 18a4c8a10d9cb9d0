"""Compare two sweeps' results and fail on a memory regression (a CI gate).

``memcore diff OLD.json NEW.json [--max-bytes-growth 0%]`` reads two ``memcore sweep --out``
JSON files, matches their variants by (model, bind, mode, fused) and prints every variant whose
figures changed (TVM-mode bytes, arena bytes, lower bound), with the ratio of the planning times
(new / old; times are reported, never gated: they depend on the machine).

A *regression* is a variant of OLD that NEW lacks, that NEW failed to plan while OLD planned it,
or whose TVM-mode or arena bytes grew by more than ``--max-bytes-growth`` (a percentage of the
old bytes, default ``0%``: bytes must not grow). Variants only in NEW are listed as new.

Exit status: 0 no regression, 1 a regression (each listed) or an unreadable file, 2 usage error.
"""
from __future__ import annotations

import json
import statistics
import sys

from ._common import InputError, UsageError, fail

__all__ = ["add_arguments", "run", "compare"]


def add_arguments(parser) -> None:
    """Add ``diff``'s arguments to an :class:`argparse.ArgumentParser`."""
    parser.add_argument("old", metavar="OLD.json", help="the baseline (memcore sweep --out)")
    parser.add_argument("new", metavar="NEW.json", help="the results to check")
    parser.add_argument("--max-bytes-growth", default="0%", metavar="PERCENT",
                        help="largest allowed growth of TVM-mode or arena bytes (default: 0%%)")


def _growth(text: str) -> float:
    t = text.strip().rstrip("%")
    try:
        v = float(t)
    except ValueError:
        raise UsageError(f"--max-bytes-growth: {text!r} is not a percentage (e.g. 0%, 2.5%)") from None
    if not v >= 0:
        raise UsageError(f"--max-bytes-growth must be >= 0; got {text!r}")
    return v / 100.0


def _load(path: str) -> dict:
    """``(model, bind, mode, fuse) -> result dict`` of a sweep's JSON file."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as exc:
        raise InputError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError(f"{path}: not JSON: {exc}") from None
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list):
        raise InputError(f"{path}: not a memcore sweep result file (no 'results' list)")
    out = {}
    for k, r in enumerate(results):
        try:
            key = (r["model"], tuple(sorted(r["bind"].items())), r["mode"], bool(r["fuse"]))
        except (TypeError, KeyError, AttributeError):
            raise InputError(f"{path}: result {k} lacks model, bind, mode or fuse") from None
        out[key] = r
    return out


def _label(key) -> str:
    model, bind, mode, fuse = key
    b = ",".join(f"{k}={v}" for k, v in bind)
    return f"{model}{' [' + b + ']' if b else ''} {mode}{' fused' if fuse else ''}"


def compare(old: dict, new: dict, max_growth: float):
    """``(regressions, changes, ratios)``: lines naming each regression, lines naming every
    other changed figure, and the new/old planning-time ratios of the variants in both."""
    regressions, changes, ratios = [], [], []
    for key, o in old.items():
        n = new.get(key)
        if n is None:
            regressions.append(f"{_label(key)}: missing from the new results")
            continue
        if o.get("error") is None and n.get("error") is not None:
            regressions.append(f"{_label(key)}: failed: {n['error']}")
            continue
        if o.get("seconds") and n.get("seconds"):
            ratios.append(n["seconds"] / o["seconds"])
        for field in ("tvm_bytes", "arena_bytes", "lower_bound"):
            a, b = o.get(field), n.get(field)
            if a == b:
                continue
            line = f"{_label(key)}: {field} {a} -> {b}"
            if (field != "lower_bound" and isinstance(a, int) and isinstance(b, int)
                    and b > a * (1.0 + max_growth)):
                regressions.append(f"{line} (+{(b - a) / a:.2%})" if a else f"{line} (from 0)")
            elif field != "lower_bound" and a is not None and b is None:
                regressions.append(f"{line} (no longer a number: {n.get(field.replace('bytes', 'expr'))})")
            else:
                changes.append(line)
    changes.extend(f"{_label(key)}: new" for key in new if key not in old)
    return regressions, changes, ratios


def run(args, out=None) -> int:
    """Run ``memcore diff`` with parsed ``args``; returns the exit status."""
    out = out or sys.stdout
    try:
        growth = _growth(args.max_bytes_growth)
        old, new = _load(args.old), _load(args.new)
    except UsageError as exc:
        return fail("diff", str(exc), 2)
    except InputError as exc:
        return fail("diff", str(exc), 1)
    regressions, changes, ratios = compare(old, new, growth)
    for line in changes:
        out.write(f"  changed: {line}\n")
    for line in regressions:
        out.write(f"REGRESSION: {line}\n")
    if ratios:
        out.write(f"planning time new/old: median {statistics.median(ratios):.2f}x, "
                  f"min {min(ratios):.2f}x, max {max(ratios):.2f}x over {len(ratios)} variants\n")
    out.write(f"{len(old)} old, {len(new)} new variants; {len(regressions)} regression(s)\n")
    if regressions:
        return fail("diff", f"{len(regressions)} regression(s) against {args.old}", 1)
    return 0
