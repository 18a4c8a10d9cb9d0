"""Parsing time is linear in the input, whatever it holds (issue 9, B1).

Workload: 1 MB of ASCII spaces inside a line, followed by a character the grammar refuses
(U+00A0, which made the old tokenizer rescan the run from each of its positions: 7.7 s at
20k spaces, hours at 1 MB), by a valid token, or by the end of the line; and the same run
on a decorator line. Each parses or fails with a ParseError.

Baseline in the same run: parsing the same module without the run (a few hundred bytes), and
the cost of one linear pass over the input, ``str.split`` of the 1 MB text, so the figure
that matters is ``seconds / split_seconds`` (recorded as ``x_linear_scan``). Target from
the issue: < 0.1 s per input.
"""
import time

import pytest

from memcore_py import parse
from memcore_py.errors import ParseError

RUN = 1_000_000
HEAD = "# from tvm.script import relax as R\n\n"
BODY = '@R.function\ndef main(x: R.Tensor((4,), "float32")):\n    return x\n'
CASES = {
    "nbsp-after-run": HEAD
    + '@R.function\ndef main(x: R.Tensor((4,), "float32")):\n    return'
    + " " * RUN
    + "\u00a0x\n",
    "token-after-run": HEAD + '@R.function\ndef main(x: R.Tensor((4,), "float32")):\n    return' + " " * RUN + "x\n",
    "run-at-line-end": HEAD + '@R.function\ndef main(x: R.Tensor((4,), "float32")):\n    return x' + " " * RUN + "\n",
    "decorator-line": HEAD + "@R.function" + " " * RUN + "\u3000\n" + BODY.split("\n", 1)[1],
    "annotation-run": HEAD
    + '@R.function\ndef main(x: R.Tensor((4,), "float32")):\n    y:'
    + " " * RUN
    + 'R.Tensor((4,), "float32") = x\n    return y\n',
}


def _parse_or_fail(text):
    try:
        parse(text)
        return "parsed"
    except ParseError:
        return "ParseError"


@pytest.mark.benchmark(group="parse-pathological")
@pytest.mark.parametrize("case", sorted(CASES))
def test_parse_pathological_whitespace(benchmark, case):
    text = CASES[case]
    t = time.perf_counter()
    text.split("\n")
    split_seconds = max(time.perf_counter() - t, 1e-9)
    times = []

    def run():
        t0 = time.perf_counter()
        out = _parse_or_fail(text)
        times.append(time.perf_counter() - t0)
        return out

    outcome = benchmark.pedantic(run, rounds=3, iterations=1)
    assert outcome in ("parsed", "ParseError")
    best = min(times)
    benchmark.extra_info.update(input_bytes=len(text), outcome=outcome, seconds=best,
                                x_linear_scan=round(best / split_seconds, 1), target_seconds=0.1)


@pytest.mark.benchmark(group="parse-pathological")
def test_parse_same_module_without_the_run(benchmark):
    """The baseline: the module without the whitespace run."""
    out = benchmark.pedantic(_parse_or_fail, args=(HEAD + BODY,), rounds=20, iterations=1)
    assert out == "parsed"
