"""Fuzzing: input generators and the invariants every input must satisfy.

Design
------
One module holds what both the CI fuzz tests (``tests/fuzz``, hypothesis-driven) and the
long campaigns (``tools/fuzz.py``, multi-process) run, so the two can never check different
things. An input is produced from a seed (an ``int``) by a pure function of it, so any
failure is reproduced by its seed alone; a *check* runs one input and returns ``None`` when
every invariant holds, else a one-line description of the violation. Checks never raise.

Inputs
    - **Text** (:func:`mutate_text`): grammar-aware mutations of TVMScript from a corpus
      (:func:`default_corpus`: the shipped examples, random modules of
      :mod:`memcore_py.testing.random_ir`, and windows of the real models): token swaps,
      deletions and duplications, truncation, line duplication and deletion, Unicode and
      control whitespace, huge, negative and float numbers, deep bracket nesting, names
      the printer uses (``R``, ``T``, ``cls``), and long whitespace runs.
    - **Kernel calls** (:func:`kernel_call`): arrays for every engine kernel, mostly valid
      (random intervals and token programs) and otherwise broken in one place: wrong
      dtype, length, rank or range, negative or int64-overflowing sizes, non-finite or
      huge scalars, unsorted events, wrong types.

Invariants
    - :func:`check_text`: ``parse`` succeeds or raises :class:`~memcore_py.errors.ParseError`
      (nothing else); a module that parses and is well-formed prints, and the printed text
      parses back to a structurally equal module that prints the same text; every pass of
      :data:`FUZZ_PASSES` run on it either raises a :class:`~memcore_py.errors.MemcoreError`
      (its precondition, named) or returns a well-formed module, which prints and reparses
      equal too (passes whose preconditions other passes establish run after them).
    - :func:`check_kernel`: the kernel raises :class:`memcore.InvalidArrayError` or
      :class:`memcore.PlanError`, or returns a result that :func:`memcore.verify_tokens` /
      :func:`memcore.verify_offsets` (or an independent recomputation) accepts.
    - the command line's contract (``memcore <cmd> FILE`` exits 0, or non-zero with one
      stderr line, no traceback, never an internal error) is checked by
      :func:`memcore_py.cli.contract.check_cli` (the CLI sits above this layer).
"""
from __future__ import annotations

import random

import numpy as np

__all__ = [
    "FUZZ_PASSES",
    "default_corpus",
    "mutate_text",
    "check_text",
    "kernel_call",
    "check_kernel",
    "KERNELS",
]

#: Pass pipelines run on every well-formed fuzzed module (kebab-case registry names). The
#: last pass is the one under test; the ones before it establish its documented
#: preconditions (KillAfterLastUse: impure-allowed, non-dataflow IR).
FUZZ_PASSES = (
    ("canonicalize-bindings",),
    ("static-plan-block-memory",),
    ("lower-alloc-tensor",),
    ("call-tir-rewrite",),
    ("to-non-dataflow",),
    ("remove-purity-checking",),
    ("remove-purity-checking", "to-non-dataflow", "kill-after-last-use"),
)

_WHITESPACE = ["\u00a0", "\u2003", "\u3000", "\x0b", "\x0c", "\t", "\r", "\x00", "\u200b", "\u2028", "\x85"]
_NUMBERS = [
    "0", "-1", "-4", "4611686018427387904", "9223372036854775807", "9223372036854775808",
    "18446744073709551616", "1e400", "0.0", "-0.5", "1.5", "10**400", "2**63", "0x10", "007",
    "99999999999999999999999999999999",
]
_TOKENS = [
    "(", ")", "[", "]", ",", ":", "=", "->", "R", "T", "I", "cls", "R.Tensor", "R.Tuple", "R.Object",
    "R.shape", "R.prim_value", "T.int64", "None", "True", "lambda", "'", '"', "#", "\\", "@", ".",
    "R.dataflow", "R.output", "return", "if", "else", "with", "def", "R.Any", "R.match_cast",
    "R.call_packed", "R.builtin.alloc_tensor", "R.memory.alloc_storage", "T.func_attr", "metadata",
]
_NAMES = ["R", "T", "I", "cls", "Module", "metadata", "n", "x", "lv", "gv", "float"]


def default_corpus(n_random: int = 40) -> list:
    """TVMScript texts to mutate: the shipped examples, ``n_random`` random modules (plain
    and lowered) and 60-line windows of the shipped real models (many of them parse)."""
    from ..examples import example_text, list_examples
    from ..examples.models import list_models, model_text
    from .random_ir import random_lowered_module, random_module

    texts = [example_text(name) for name in list_examples()]
    for seed in range(n_random):
        texts.append(random_module(seed, 12 + seed % 30).script())
        texts.append(random_lowered_module(seed, 10 + seed % 25).script())
    for name in list_models():
        lines = model_text(name).split("\n")
        for start in range(0, min(len(lines), 600), 120):
            texts.append("\n".join(lines[:12] + lines[start:start + 60]))
    return texts


# ------------------------------------------------------------------------------ text mutation
def mutate_text(text: str, seed: int) -> str:
    """A mutation of ``text`` chosen by ``seed`` (1 to 4 edits, mostly 1, each grammar-aware)."""
    from ..ir.text.lexer import tokenize

    rng = random.Random(seed)
    lines = text.split("\n")
    for _ in range(rng.choice((1, 1, 1, 2, 3, 4))):
        if not lines:
            lines = [""]
        k = rng.randrange(len(lines))
        line = lines[k]
        toks = tokenize(line)
        op = rng.randrange(14)
        if op == 0 and toks:  # swap two tokens
            i, j = rng.randrange(len(toks)), rng.randrange(len(toks))
            toks[i], toks[j] = toks[j], toks[i]
            lines[k] = _indent(line) + " ".join(toks)
        elif op == 1 and toks:  # delete a token
            del toks[rng.randrange(len(toks))]
            lines[k] = _indent(line) + " ".join(toks)
        elif op == 2 and toks:  # duplicate a token
            i = rng.randrange(len(toks))
            toks.insert(i, toks[i])
            lines[k] = _indent(line) + " ".join(toks)
        elif op == 3:  # replace a token by one the grammar uses
            if toks:
                toks[rng.randrange(len(toks))] = rng.choice(_TOKENS)
                lines[k] = _indent(line) + " ".join(toks)
        elif op == 4:  # truncate the text
            cut = rng.randrange(len(text) + 1)
            return "\n".join(lines)[:cut]
        elif op == 5:  # duplicate a line
            lines.insert(k, line)
        elif op == 6:  # delete a line
            del lines[k]
        elif op == 7:  # Unicode / control whitespace somewhere in the line
            pos = rng.randrange(len(line) + 1)
            lines[k] = line[:pos] + rng.choice(_WHITESPACE) + line[pos:]
        elif op == 8:  # a number replaced by a huge / negative / float one
            nums = [i for i, t in enumerate(toks) if t[:1].isdigit()]
            if nums:
                toks[rng.choice(nums)] = rng.choice(_NUMBERS)
                lines[k] = _indent(line) + " ".join(toks)
            else:
                lines[k] = line.replace("4", rng.choice(_NUMBERS), 1)
        elif op == 9:  # deep nesting
            depth = rng.choice([10, 70, 200, 2000])
            pos = rng.randrange(len(line) + 1)
            lines[k] = line[:pos] + "(" * depth + "x" + ")" * depth + line[pos:]
        elif op == 10:  # a name the printer uses
            names = [i for i, t in enumerate(toks) if t[:1].isalpha() and "." not in t]
            if names:
                old = toks[rng.choice(names)]
                new = rng.choice(_NAMES)
                lines = [ln.replace(old, new) for ln in lines]
        elif op == 11:  # a long whitespace run, then something odd
            pos = rng.randrange(len(line) + 1)
            lines[k] = line[:pos] + " " * rng.choice([100, 5000]) + rng.choice(_WHITESPACE + ["x", ""]) + line[pos:]
        elif op == 12:  # change the indentation
            lines[k] = rng.choice(["", " ", "\t", "  " * rng.randrange(8)]) + line.lstrip()
        else:  # a random printable or not character
            pos = rng.randrange(len(line) + 1)
            lines[k] = line[:pos] + chr(rng.choice([rng.randrange(32, 127), rng.randrange(0, 0x3000)])) + line[pos:]
    return "\n".join(lines)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


# ------------------------------------------------------------------------------ text checks
def check_text(text: str, *, passes: bool = True) -> str | None:
    """Run the text invariants on ``text``; None when they hold, else what was violated."""
    from .. import parse
    from ..errors import MemcoreError, ParseError
    from ..ir import well_formed

    try:
        mod = parse(text)
    except ParseError:
        return None
    except Exception as exc:  # noqa: BLE001 - the invariant under test
        return f"parse raised {type(exc).__name__}: {exc}"
    try:
        if not well_formed(mod):
            return None
    except Exception as exc:  # noqa: BLE001
        return f"well_formed raised {type(exc).__name__}: {exc}"
    problem = _round_trip(mod, "parsed module")
    if problem is not None or not passes:
        return problem
    from ..transform import PassContext, get_pass

    for pipeline in FUZZ_PASSES:
        name = pipeline[-1]
        try:
            with PassContext(verify=False):
                out = mod
                for step in pipeline:
                    out = get_pass(step)(out)
        except MemcoreError:
            continue  # a typed refusal (its precondition)
        except Exception as exc:  # noqa: BLE001
            return f"pass {name} raised {type(exc).__name__}: {exc}"
        try:
            ok = well_formed(out)
        except Exception as exc:  # noqa: BLE001
            return f"well_formed after {name} raised {type(exc).__name__}: {exc}"
        if not ok:
            from ..ir import well_formed_report

            return f"pass {name} returned ill-formed IR: {well_formed_report(out)[:2]}"
        problem = _round_trip(out, f"output of {name}")
        if problem is not None:
            return problem
    return None


def _round_trip(mod, what: str) -> str | None:
    from .. import parse
    from ..errors import MemcoreError
    from ..ir import structural_equal

    try:
        text = mod.script()
    except MemcoreError as exc:
        return f"{what} does not print: {exc}"
    except Exception as exc:  # noqa: BLE001
        return f"printing the {what} raised {type(exc).__name__}: {exc}"
    try:
        again = parse(text)
    except Exception as exc:  # noqa: BLE001
        return f"the printed {what} does not parse: {type(exc).__name__}: {str(exc).splitlines()[0]}"
    if not structural_equal(mod, again):
        return f"the printed {what} parses to a different module"
    if again.script() != text:
        return f"printing the reparsed {what} gives different text"
    return None


# ------------------------------------------------------------------------------ kernels
KERNELS = ("live_intervals", "max_live_bytes", "live_profile", "plan_tokens", "plan_offsets", "verify_offsets",
           "verify_tokens")

_BAD_SCALARS = [-1, 0, 2**62, 2**63, 10**400, -(10**400), float("inf"), float("nan"), 1.5, "3", None, True]


def _intervals(rng: np.random.Generator, n: int):
    start = rng.integers(0, 50, n, dtype=np.int64)
    end = start + rng.integers(0, 20, n, dtype=np.int64)
    size = rng.integers(0, 1 << rng.integers(1, 30), n, dtype=np.int64)
    return start, end, size


def _break(rng: np.random.Generator, arrays: list):
    """Break one of ``arrays`` in one way (or none): the malformed-call half of the fuzzer."""
    kind = int(rng.integers(0, 18))
    if kind >= 9 or not arrays:  # half the calls stay valid
        return arrays
    candidates = [k for k, x in enumerate(arrays) if isinstance(x, np.ndarray)]
    if not candidates:
        return arrays
    i = candidates[int(rng.integers(0, len(candidates)))]
    a = arrays[i]
    if kind == 0:
        arrays[i] = a.astype(np.float64)
    elif kind == 1:
        arrays[i] = a[:-1] if a.size else np.zeros(1, np.int64)
    elif kind == 2:
        arrays[i] = a.reshape(1, -1)
    elif kind == 3 and a.size:
        b = a.copy()
        b[int(rng.integers(0, a.size))] = -int(rng.integers(1, 10))
        arrays[i] = b
    elif kind == 4 and a.size:
        b = a.astype(np.int64).copy()
        b[int(rng.integers(0, a.size))] = np.iinfo(np.int64).max - int(rng.integers(0, 3))
        arrays[i] = b
    elif kind == 5:
        arrays[i] = a.astype(np.uint64) if a.size and a.min() >= 0 else a.astype(np.int32)
    elif kind == 6:
        arrays[i] = a[::-1] if a.ndim == 1 else a
    elif kind == 7:
        arrays[i] = [int(x) for x in a.ravel()] + [None]
    else:
        arrays[i] = a.astype(object)
    return arrays


def kernel_call(seed: int):
    """``(kernel name, args tuple, kwargs dict)`` for ``seed``: a valid call about half the
    time, else broken in one array or scalar."""
    rng = np.random.default_rng(seed)
    name = KERNELS[seed % len(KERNELS)]
    n = int(rng.choice([0, 1, 2, 5, 30, 200]))
    kwargs: dict = {}
    if name in ("max_live_bytes", "live_profile", "plan_offsets", "verify_offsets"):
        start, end, size = _intervals(rng, n)
        args = [start, end, size]
        if name == "live_profile":
            args.append(int(end.max() + 1) if n else 1)
        if name == "plan_offsets":
            kwargs["algorithm"] = str(rng.choice(["auto", "greedy_size", "greedy_start", "best_fit"]))
            if rng.random() < 0.3:
                kwargs["time_limit"] = 0.01
        if name == "verify_offsets":
            offset = rng.integers(0, 1 << 20, n, dtype=np.int64)
            args += [offset, int((offset + size).max()) if n else 0]
        if name != "verify_offsets" and rng.random() < 0.2:
            kwargs["alignment"] = int(rng.choice([1, 8, 64, 3]))
    elif name == "live_intervals":
        n_steps = int(rng.integers(1, 40))
        def_pos = rng.integers(-1, n_steps, n, dtype=np.int64)
        counts = rng.integers(0, 3, n)
        use_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        use_pos = np.concatenate([rng.integers(max(d, 0), n_steps, c) for d, c in zip(def_pos, counts)]
                                 or [np.zeros(0)]).astype(np.int64)
        is_output = rng.integers(0, 2, n).astype(np.int8)
        args = [def_pos, use_ptr, use_pos, is_output, n_steps]
    else:  # plan_tokens / verify_tokens
        args = list(_token_program(rng, n))
        if rng.random() < 0.3:
            kwargs["match_range"] = int(rng.choice([0, 1, 16, -1]))
        if rng.random() < 0.3:
            kwargs["release_zero_ref"] = True
        if name == "verify_tokens":
            kwargs.pop("match_range", None)
            kwargs.pop("release_zero_ref", None)
            import memcore

            try:
                plan = memcore.plan_tokens(*args)
            except memcore.MemcoreError:
                plan = None
            args.append(plan)
    args = _break(rng, args)
    if rng.random() < 0.15:  # a bad scalar argument or keyword
        if kwargs and rng.random() < 0.5:
            key = str(rng.choice(sorted(kwargs)))
            kwargs[key] = _BAD_SCALARS[int(rng.integers(0, len(_BAD_SCALARS)))]
        elif name in ("live_profile", "live_intervals"):
            args[-1] = _BAD_SCALARS[int(rng.integers(0, len(_BAD_SCALARS)))]
    return name, tuple(args), kwargs


def _token_program(rng: np.random.Generator, n: int):
    """A random valid token program: every token requested once, then released by its refs."""
    tok_bytes = rng.integers(0, 1 << 16, n, dtype=np.int64)
    tok_pool = rng.integers(0, 2, n, dtype=np.int64)
    tok_refs = rng.integers(1, 3, n, dtype=np.int64)
    events = []
    live = []
    for t in range(n):
        events.append((0, t))
        live.extend([t] * int(tok_refs[t]))
        while live and rng.random() < 0.5:
            events.append((1, live.pop(int(rng.integers(0, len(live))))))
    ev_kind = np.array([e[0] for e in events], dtype=np.int8)
    ev_tok = np.array([e[1] for e in events], dtype=np.int64)
    return tok_bytes, tok_pool, tok_refs, ev_kind, ev_tok


def check_kernel(name: str, args: tuple, kwargs: dict) -> str | None:
    """Run the kernel invariant on one call; None when it holds."""
    import memcore
    from memcore._reference import max_live_bytes as _max_live_reference  # the plain sweep

    try:
        result = getattr(memcore, name)(*args, **kwargs)
    except (memcore.InvalidArrayError, memcore.PlanError):
        return None
    except Exception as exc:  # noqa: BLE001 - the invariant under test
        return f"{name} raised {type(exc).__name__}: {exc}"
    try:
        if name == "plan_tokens":
            memcore.verify_tokens(*args[:5], result, tok_sym=kwargs.get("tok_sym"))
        elif name == "plan_offsets":
            memcore.verify_offsets(args[0], args[1], args[2], result.offset, result.arena_bytes)
            if result.arena_bytes < result.lower_bound:
                return f"plan_offsets: arena {result.arena_bytes} below its lower bound {result.lower_bound}"
        elif name == "max_live_bytes":
            ref = _max_live_reference(args[0], args[1], args[2], alignment=kwargs.get("alignment", 1))
            if int(result) != ref:
                return f"max_live_bytes = {int(result)}, a plain sweep gives {ref}"
        elif name == "live_profile":
            ref = _max_live_reference(args[0], args[1], args[2], alignment=kwargs.get("alignment", 1))
            if (int(result.max()) if len(result) else 0) != ref:
                return f"live_profile peak {int(result.max())} differs from a plain sweep ({ref})"
    except (memcore.PlanError, memcore.InvalidArrayError) as exc:
        return f"{name} returned a result its verifier refuses: {exc}"
    except Exception as exc:  # noqa: BLE001
        return f"checking {name}'s result raised {type(exc).__name__}: {exc}"
    return None
