"""Plain helpers shared by several test files (fixtures live in ``conftest.py``).

``tests/conftest.py`` puts this folder on ``sys.path``, so a test file imports these as
``from _helpers import strip_kills``, both from the repository root (``python -m pytest -q``)
and for a single file (``python -m pytest tests/x/test_y.py``).

Only the standard library is imported at module level: the engine tests (``tests/memcore``)
import this file too and must not pull in ``memcore_py``.
"""
from __future__ import annotations

import contextlib
import inspect
import sys
from pathlib import Path

#: The repository root (the folder holding ``setup.py``).
REPO_ROOT = Path(__file__).resolve().parents[1]

#: TVMScript files printed by Apache TVM 0.27 (``tests/data/tvm_printed/generate.py``).
TVM_PRINTED_DIR = REPO_ROOT / "tests" / "data" / "tvm_printed"
TVM_PRINTED_FILES = sorted(TVM_PRINTED_DIR.glob("*.txt"))

#: MiniMalloc's CSV problems, shipped with the benchmarks.
MINIMALLOC_DIR = REPO_ROOT / "bench" / "data" / "minimalloc"

def _frames_without_source(context: int = 1) -> list:
    """``inspect.stack()``'s frames, innermost first, without their source lines."""
    frames = []
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        frames.append(inspect.FrameInfo(frame, code.co_filename, frame.f_lineno, code.co_name, None, None))
        frame = frame.f_back
    return frames


@contextlib.contextmanager
def _stack_without_source():
    real = inspect.stack
    inspect.stack = _frames_without_source
    try:
        yield
    finally:
        inspect.stack = real


def tvm_from_source(text: str, **kwargs):
    """``tvm.script.from_source(text, **kwargs)``: TVM's own parse of a TVMScript text, quicker.

    TVM's decorators (``T.prim_func(...)``, ``R.function(...)``) call ``inspect.stack()`` when the
    parser evaluates them for their dialect. From a text that stack is never used (it resolves
    closure variables of a decorated Python function), but ``inspect.stack()`` reads each frame's
    source and module: under pytest, about 0.2 s per function parsed, most of a module's parse.
    Here the stack's frames come without source lines; the parser, its globals and its result are
    TVM's. (Python source decorated in a test is not parsed through here: TVM reads the source
    lines of its stack to find an enclosing ``@I.ir_module`` class.) The library's own way round
    the capture, :func:`memcore_py.tvm.compat.parse_script`, is not used: the oracle's input must
    not depend on memcore's code.
    """
    import tvm

    with _stack_without_source():
        return tvm.script.from_source(text, **kwargs)


def load_make_models():
    """``tools/make_models.py`` as a module (the plain-torch model definitions the shipped
    high-level texts were made from; a dev script, not part of the package)."""
    import importlib.util
    import sys

    name = "_memcore_make_models"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "tools" / "make_models.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
    return sys.modules[name]


#: The ops a kill binding calls (``KillAfterLastUse`` output).
KILL_OPS = ("relax.memory.kill_tensor", "relax.memory.kill_storage", "relax.vm.kill_object")


def run_cli(capsys, *argv):
    """Run ``memcore`` in-process; return ``(exit code, stdout, stderr)``.

    argparse's usage errors and ``--version`` exit through ``SystemExit``; its code is
    returned like any other.
    """
    from memcore_py.cli import main

    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def is_kill(binding) -> bool:
    """Whether ``binding`` calls one of :data:`KILL_OPS`."""
    from memcore_py.ir.expr import Call

    value = binding.value
    return isinstance(value, Call) and getattr(value.op, "name", "") in KILL_OPS


def strip_kills(func):
    """``func`` without its kill bindings, also inside ``If`` branches (blocks re-normalized)."""
    from memcore_py.ir.expr import Function, If, MatchCast, SeqExpr, VarBinding
    from memcore_py.ir.functor import normalize_blocks

    def seq(s):
        blocks = []
        for blk in s.blocks:
            keep = []
            for b in blk.bindings:
                if is_kill(b):
                    continue
                v = b.value
                if isinstance(v, If):
                    v = If(v.cond, seq(v.true_branch), seq(v.false_branch), v.ty)
                    b = MatchCast(b.var, v, b.ty) if isinstance(b, MatchCast) else VarBinding(b.var, v)
                keep.append(b)
            blocks.append(type(blk)(keep))
        return SeqExpr(normalize_blocks(blocks), s.body)

    return Function(func.params, seq(func.body), func.ret_ty, func.attrs, func.is_pure)


def dynamic_model_text(name: str, bounded: bool) -> str:
    """The dynamic-shape export of a shipped model the benchmarks plan
    (``bench/bench_small_and_dynamic.py``'s ``dynamic_text``): its sequence length symbolic,
    with the benchmarks' upper bound when ``bounded``."""
    import sys

    sys.path.insert(0, str(REPO_ROOT / "bench"))
    try:
        from bench_small_and_dynamic import UPPER_BOUND, dynamic_text
    finally:
        sys.path.pop(0)
    return dynamic_text(name, UPPER_BOUND if bounded else None)


def tvm_call_tir_bindings(mod):
    """``(binding, call)`` for every ``R.call_tir`` bound in the Relax functions of the
    ``tvm.IRModule`` ``mod``, in order (TVM is imported here, not at module level)."""
    import tvm
    from tvm import relax

    for f in mod.functions.values():
        if isinstance(f, relax.Function):
            for blk in f.body.blocks:
                for b in blk.bindings:
                    v = b.value
                    if isinstance(v, relax.Call) and isinstance(v.op, tvm.ir.Op) and v.op.name == "relax.call_tir":
                        yield b, v
