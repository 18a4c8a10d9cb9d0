"""Fuzzing the bridge to Apache TVM: random modules TVM accepts, read, written back and
transformed three ways (TVM's pass, memcore's native pass, memcore's pass on the text).

Design
------
The shape of :mod:`memcore_py.testing.fuzzing`: :func:`bridge_input` makes a
``tvm.IRModule`` from a seed, :func:`check_bridge` runs the invariants on it and returns
``None`` or a one-line ``"<kind>: <what>"``; it never raises, except :class:`MemoryError` and
``BaseException`` subclasses that are not errors (the campaign's alarm).

Inputs (:func:`bridge_input`; ``seed % 7`` picks the generator, ``(seed // 7) % 10`` the kind)
    - 0-7: a random module of one of memcore's generators (:data:`GENERATORS`: flat lowered
      functions, post-CallTIRRewrite modules with control flow, symbolic sizes and devices,
      post-planning modules with kills, high-level dataflow programs, layout-free ``call_tir``
      programs with real TIR, in-place candidates). A generator that builds memcore IR has
      its module built as TVM objects with TVM's constructors
      (:func:`memcore_py.tvm.to_tvm`: TVM's parser costs ten times more); every
      :data:`PARSER_EVERY`-th of them (``(seed // 7) % PARSER_EVERY == 1``) is read by TVM's
      parser (``tvm.script.from_source``) instead, and the two constructions must be
      structurally equal (the constructors build what the parser builds). A generator that writes
      text is read by memcore's parser
      (its printed form: every type written) and built the same way;
    - 8-9: the generator's text mutated by :func:`memcore_py.testing.fuzzing.mutate_text`
      and read by TVM's parser; up to :data:`MUTATION_TRIES` mutations are tried, the first
      one TVM accepts is the input (if none is, the unmutated module built with the
      constructors is, and ``info`` says so).

Invariants (:func:`check_bridge`)
    1. every exception memcore raises is a :class:`~memcore_py.errors.MemcoreError`;
    2. ``from_tvm(m)`` equals ``memcore_py.parse(m.script())`` (memcore's structural
       equality; both refusing is fine, one refusing what the other reads is not), except
       where DIFFERENCES.md (the bridge) lists it: ``from_tvm`` refusing a function-valued
       or ``sinfo_args`` call attribute or a symbolic variable with an empty name, and TVM's
       text spelling a non-finite float attribute as a string;
    3. ``to_tvm(from_tvm(m))`` equals ``m`` (``tvm_ffi.structural_equal``);
    4. for each pass of :data:`BRIDGE_PASSES`, memcore's native pass on ``m`` read back with
       ``from_tvm`` equals memcore's pass on the text (functions in ``m``'s order; up to the
       printer's renames of duplicate names and the text's spelling of non-finite floats), and
       equals TVM's ``relax.transform.<Pass>()(m)``
       (``tvm.ir.assert_structural_equal(..., map_free_vars=True)``) with TVM's behaviour
       where memcore has a switch for it (``KillAfterLastUse(tvm_scoping=True)``,
       ``DataflowUseInplaceCalls(tvm_compat=True)``,
       ``AttachAttrLayoutFreeBuffers(tvm_compat=True)``). Where they differ, or one raises and
       the other does not, the case must be a DIFFERENCES.md entry that
       :func:`listed_difference` recognises; a recognised case is counted under its name in
       ``info["listed"]``, anything else is a violation;
    5. StaticPlanBlockMemory in arena mode (no TVM counterpart): native equals text, and the
       plan passes :func:`memcore_py.planning.check.verify_planned`;
    6. where TVM's StaticPlanBlockMemory equals memcore's, the native LowerAllocTensor and
       KillAfterLastUse chained on the native output (the hand-over between consecutive
       native passes) equal TVM's chain (but for functions no native pass changed, which
       TVM's chain rebuilds: ``unplanned-module-kept``).
"""
from __future__ import annotations

import re

__all__ = [
    "GENERATORS",
    "BRIDGE_PASSES",
    "PARSER_EVERY",
    "MUTATION_TRIES",
    "generated_text",
    "bridge_input",
    "check_bridge",
    "listed_difference",
]

#: Pass name -> keyword arguments giving TVM's behaviour (the native pass, memcore's pass).
BRIDGE_PASSES = {
    "StaticPlanBlockMemory": {},
    "LowerAllocTensor": {},
    "KillAfterLastUse": {"tvm_scoping": True},
    "DataflowUseInplaceCalls": {"tvm_compat": True},
    "AttachAttrLayoutFreeBuffers": {"tvm_compat": True},
}

#: Every this many generated inputs, TVM's parser builds the module (and must agree with the
#: constructors).
PARSER_EVERY = 20

#: Mutations tried per mutated input before falling back to the unmutated module.
MUTATION_TRIES = 4


def _lowered(seed):
    from .random_ir import random_lowered_module

    return random_lowered_module(seed, 8 + seed % 40)


def _memory(seed):
    from .memory_programs import random_memory_module

    return random_memory_module(seed, n_functions=1 + seed % 3, n_steps=4 + seed % 10)


def _memory_dynamic(seed):
    from .memory_programs import random_memory_module

    return random_memory_module(seed, n_functions=1 + seed % 2, n_steps=4 + seed % 10, p_symbolic=0.8, p_if=0.5,
                                p_dataflow=0.5, p_device=0.2)


def _kill(seed):
    from .lowering_programs import random_kill_module

    return random_kill_module(seed, n_functions=1 + seed % 2, n_steps=6 + seed % 10, control_flow=seed % 3 != 0)


def _highlevel(seed):
    from .lowering_programs import random_highlevel_module

    return random_highlevel_module(seed, n_functions=1 + seed % 2, n_ops=3 + seed % 8)


def _layout_free(seed):
    from .layout_free_programs import random_layout_free_program

    return random_layout_free_program(seed)


def _inplace(seed):
    from .inplace_programs import random_inplace_program

    return random_inplace_program(seed, n_bindings=4 + seed % 12)


#: Generator name -> ``seed -> memcore IRModule or TVMScript text``, in input order.
GENERATORS = {
    "lowered": _lowered,
    "memory": _memory,
    "memory-dynamic": _memory_dynamic,
    "kill": _kill,
    "highlevel": _highlevel,
    "layout-free": _layout_free,
    "inplace": _inplace,
}


def generated_text(seed: int) -> tuple:
    """``(generator name, memcore module or None, TVMScript text)`` of ``seed``'s generator
    (``seed % 7`` picks it)."""
    name = list(GENERATORS)[seed % len(GENERATORS)]
    made = GENERATORS[name](seed)
    if isinstance(made, str):
        return name, None, made
    return name, made, made.script()


def _from_source(text: str):
    """TVM's parser on ``text``; None when it refuses it (any exception: TVM's parser
    reports errors as several Python and FFI types)."""
    import tvm

    try:
        return tvm.script.from_source(text)
    except Exception:  # noqa: BLE001 - the parser is TVM's, any refusal ends the attempt
        return None


def bridge_input(seed: int, info: dict | None = None):
    """The ``tvm.IRModule`` of ``seed`` (module docstring), or a one-line problem string
    when memcore's writer fails on the generated module or builds another module than TVM's
    parser does from its text.

    ``info`` gets ``generator``, ``how`` (``"constructors"``, ``"parser"``, ``"mutated"`` or
    ``"mutation-refused"``) and ``text`` (the TVMScript the module was made from).
    """
    info = {} if info is None else info
    name, mod, text = generated_text(seed)
    info["generator"], info["text"] = name, text
    if _is_mutated(seed):
        m = _mutated(text, seed, info)
        if m is not None:
            return m
        info["how"] = "mutation-refused"
    if mod is None:
        mod, err, problem = _memcore_call(f"reading the {name} generator's text", _typed_reading, text)
        if problem or err is not None:
            return problem or f"generator: memcore's parser refuses the {name} generator's text: {_first_line(err)}"
    built, err, problem = _memcore_call("to_tvm of the generated module", _to_tvm, mod)
    if problem or err is not None:
        return problem or f"generator: to_tvm refuses the {name} generator's module: {_first_line(err)}"
    if (seed // len(GENERATORS)) % PARSER_EVERY == 1 and "how" not in info:
        info.setdefault("how", "parser")
        return _parsed_like(built, text, name, seed)
    info.setdefault("how", "constructors")
    return built


def _is_mutated(seed: int) -> bool:
    """Two seeds in ten, spread over the generators: ``(seed // 7) % 10 >= 8``."""
    return (seed // len(GENERATORS)) % 10 >= 8


def _typed_reading(text: str):
    """memcore's reading of its own printed form of ``text``: the printer writes every
    binding's and the return's type, which a text generator leaves to inference and
    :func:`~memcore_py.tvm.to_tvm` needs."""
    import memcore_py

    return memcore_py.parse(memcore_py.parse(text).script())


def _to_tvm(mod):
    from ..tvm import to_tvm

    return to_tvm(mod)


def _mutated(text: str, seed: int, info: dict):
    """The first of :data:`MUTATION_TRIES` mutations of ``text`` TVM's parser accepts, or None."""
    from .fuzzing import mutate_text

    for k in range(MUTATION_TRIES):
        mutated = mutate_text(text, seed * MUTATION_TRIES + k)
        m = _from_source(mutated)
        if m is not None:
            info["how"], info["text"] = "mutated", mutated
            return m
    return None


def _parsed_like(built, text: str, name: str, seed: int):
    """TVM's parse of ``text``, or a problem string when it differs from ``built`` (the
    module TVM's constructors made from memcore's reading of the same program)."""
    import tvm_ffi

    parsed = _from_source(text)
    if parsed is None:
        return f"generator: TVM's parser refuses the {name} generator's text (seed {seed})"
    if not tvm_ffi.structural_equal(built, parsed):
        mismatch = tvm_ffi.get_first_structural_mismatch(built, parsed)
        return f"constructors-vs-parser: to_tvm of the {name} module differs from TVM's parse of its text: " \
               f"{str(mismatch)[:200]}"
    return parsed


# ------------------------------------------------------------------------------ checks
def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0][:200] if lines else ''}"


def _memcore_call(what: str, fn, *args):
    """``(result, typed error, violation)``: ``fn(*args)``'s result, or the
    :class:`~memcore_py.errors.MemcoreError` it raised, or an ``untyped`` violation."""
    from ..errors import MemcoreError

    try:
        return fn(*args), None, None
    except MemcoreError as exc:
        return None, exc, None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - the invariant under test
        return None, None, f"untyped: {what} raised {_first_line(exc)}"


def _tvm_call(fn, *args):
    """``(result, error)`` of TVM's ``fn(*args)`` (TVM's errors are of many types)."""
    try:
        return fn(*args), None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - TVM's behaviour, compared below
        return None, exc


def check_bridge(m, info: dict | None = None) -> str | None:
    """Run the bridge invariants (module docstring) on the ``tvm.IRModule`` ``m``.

    Parameters
    ----------
    m : tvm.IRModule
    info : dict, optional
        Filled with ``read`` (from_tvm read the module), ``listed`` (the DIFFERENCES.md
        entries met, by name) and ``refused`` (typed refusals by memcore where TVM's pass
        ran, listed ones included).

    Returns
    -------
    str or None
        None when every invariant holds, else ``"<kind>: <what>"``.
    """
    from ..transform import PassContext

    info = {} if info is None else info
    info.setdefault("listed", [])
    from ..errors import MemcoreError

    try:
        with PassContext(verify=False):  # as in a user's pipeline; TVM-exact outputs can be ill-formed (kill-dataflow)
            return _check_all(m, info)
    except MemoryError:
        raise
    except MemcoreError as exc:  # every memcore call the checks compare is wrapped; this one was not
        return f"escaped: a typed error outside the compared calls: {_first_line(exc)}"
    except Exception as exc:  # noqa: BLE001
        return f"untyped: outside the compared calls: {_first_line(exc)}"


def _check_all(m, info) -> str | None:
    problem, mine, read = _check_reading(m, info)
    if problem is None:
        problem = _check_round_trip(m, mine)
    pure_in = _ordered(m, read) if read is not None and mine is not None else None
    if problem is None:
        problem = _check_passes(m, mine, pure_in, info)
    if problem is None and pure_in is not None:
        problem = _check_arena(m, pure_in)
    return problem


def _check_reading(m, info) -> tuple:
    """``(problem, from_tvm(m) or None, parse(m.script()) or None)``."""
    import memcore_py

    from ..errors import ParseError
    from ..ir import structural_equal
    from ..tvm import from_tvm

    mine, mine_err, problem = _memcore_call("from_tvm", from_tvm, m)
    if problem:
        return problem, None, None
    info["read"] = mine is not None
    text, text_err = _tvm_call(m.script)
    if text_err is not None:
        return None, mine, None  # TVM cannot print it: no text path to compare
    try:
        read = memcore_py.parse(text)
    except ParseError as exc:
        read, read_err = None, exc
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001
        return f"untyped: parse(m.script()) raised {_first_line(exc)}", mine, None
    else:
        read_err = None
    if mine is not None and read is not None:
        same, err, problem = _memcore_call("comparing from_tvm(m) with parse(m.script())", structural_equal, mine, read)
        if problem:
            return problem, mine, read
        if err is not None:  # PrimFuncs are read when first compared (PrimFunc.lazy)
            return f"from_tvm-vs-text: from_tvm(m) returns, comparing it raises {_first_line(err)}", None, read
        if not same:
            if _non_finite_float_attributes_explain(mine, read):
                info["listed"].append("non-finite-float-attribute")
                return None, mine, read
            return "from_tvm-vs-text: from_tvm(m) differs from parse(m.script())", mine, read
    elif mine is not None:
        return f"from_tvm-vs-text: from_tvm reads m, parse(m.script()) refuses it: {_first_line(read_err)}", mine, None
    elif read is not None:
        listed = _listed_refusal(mine_err)
        if listed:
            info["listed"].append(listed)
            return None, None, read
        return f"from_tvm-vs-text: from_tvm refuses m ({_first_line(mine_err)}), parse(m.script()) reads it", None, read
    return None, mine, read


def _listed_refusal(err) -> str | None:
    """The DIFFERENCES.md entry (the bridge) under which ``from_tvm`` refuses what memcore's
    parser reads from TVM's text: ``attribute-holding-a-function`` (a call attribute holding
    a function: what TVM's parser makes of a type constructor given to a keyword, e.g.
    ``foo=R.Object``) or ``sinfo-args-attribute`` (a call attribute named ``sinfo_args``,
    which memcore's parser reads as the call's ``ty_args``) or ``unnamed-tir-variable`` (a
    symbolic variable with an empty name, which TVM's text names ``v``); else None."""
    from ..tvm import TVMConversionError

    if not isinstance(err, TVMConversionError):
        return None
    text = str(err)
    if text.startswith("attribute 'sinfo_args' of a call in ") and "reads it as the call's ty_args" in text:
        return "sinfo-args-attribute"
    if "Function value" in text and "of attribute" in text:
        return "attribute-holding-a-function"
    if text.startswith(("a TIR variable with an empty name ", "a symbolic variable with an empty name ")):
        return "unnamed-tir-variable"
    return None


#: memcore's spelling of a non-finite float attribute value (TVM's is a string literal).
_NON_FINITE_FLOAT = re.compile(r'float\("(inf|-inf|nan)"\)')


def _non_finite_float_attributes_explain(mine, read) -> bool:
    """Whether ``from_tvm(m)`` (``mine``) and ``parse(m.script())`` (``read``) differ only in
    non-finite float attribute values (DIFFERENCES.md, the bridge, ``non-finite-float-attribute``):
    TVM prints a float ``inf`` / ``-inf`` / ``nan`` held by an attribute as the string
    ``"inf"`` ..., which its own parser and memcore's read as a string. Recognised when
    ``mine`` printed by memcore (which spells the value ``float("inf")``) with each such
    value written as TVM writes it parses to a module equal to ``read``; the round-trip check
    that follows makes sure ``mine`` holds ``m``'s floats."""
    import memcore_py

    from ..ir import structural_equal

    try:
        text = mine.script()
        if not _NON_FINITE_FLOAT.search(text):
            return False
        return structural_equal(memcore_py.parse(_NON_FINITE_FLOAT.sub(r'"\1"', text)), read)
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - not printable or not readable so: not this difference
        return False


def _check_round_trip(m, mine) -> str | None:
    import tvm_ffi

    from ..tvm import to_tvm

    if mine is None:
        return None
    back, err, problem = _memcore_call("to_tvm", to_tvm, mine)
    if problem:
        return problem
    if err is not None:
        return f"round-trip: to_tvm(from_tvm(m)) refuses: {_first_line(err)}"
    if not tvm_ffi.structural_equal(back, m):
        mismatch = tvm_ffi.get_first_structural_mismatch(back, m)
        return f"round-trip: to_tvm(from_tvm(m)) differs from m: {str(mismatch)[:200]}"
    return None


def _ordered(m, read):
    """memcore's reading of ``m``'s text with its functions in ``m``'s order (TVM's text
    sorts them; a pass naming new functions names them in the module's order)."""
    from ..ir import IRModule

    try:
        return IRModule({read.get_global_var(gv.name_hint): read[gv.name_hint] for gv in m.functions}, read.attrs,
                        read.global_infos)
    except (KeyError, ValueError):
        return read


def _pure(name: str, kwargs: dict, mod):
    """memcore's pass ``name`` on memcore IR."""
    from .. import transform as mc

    return getattr(mc, name)(**kwargs)(mod)


def _check_passes(m, mine, pure_in, info) -> str | None:
    from tvm import relax

    from .. import tvm as mtvm
    from ..transform.static_plan_block_memory import differences_from_tvm

    diffs = []
    if mine is not None or pure_in is not None:
        diffs, _, problem = _memcore_call("differences_from_tvm", differences_from_tvm,
                                          pure_in if pure_in is not None else mine)
        if problem:
            return problem
        diffs = list(diffs or [])
    outputs = {}
    for name, kwargs in BRIDGE_PASSES.items():
        theirs, their_err = _tvm_call(getattr(relax.transform, name)(), m)
        ours, our_err, problem = _memcore_call(f"native {name}", getattr(mtvm, name)(**kwargs), m)
        if problem:
            return problem
        problem, _ = _native_vs_text(name, kwargs, ours, our_err, pure_in, info["listed"])
        if problem is None:
            problem = _native_vs_tvm(name, m, ours, our_err, theirs, their_err, diffs, info)
        if problem:
            return problem
        outputs[name] = (ours, theirs)
    ours, theirs = outputs["StaticPlanBlockMemory"]
    if ours is not None and theirs is not None and not diffs:
        return _check_chain(ours, theirs, info)
    return None


def _native_vs_text(name, kwargs, ours, our_err, pure_in, listed=None) -> tuple:
    """``(problem, memcore's output on the text)``: the native pass's output read back must
    equal memcore's pass on the text, or differ from it by the printer's renames only
    (``duplicate-binding-names``) or by the text's spelling of non-finite float attributes
    (``non-finite-float-attribute``; the entries met are appended to ``listed``)."""
    from ..ir import structural_equal
    from ..tvm import from_tvm

    if pure_in is None:
        return None, None
    pure, pure_err, problem = _memcore_call(f"{name} on the text", _pure, name, kwargs, pure_in)
    if problem:
        return problem, None
    if ours is None and pure is None:
        return None, None
    if ours is None:
        return f"native-vs-text: native {name} raises {_first_line(our_err)}, on the text it returns", pure
    if pure is None:
        return f"native-vs-text: native {name} returns, on the text it raises {_first_line(pure_err)}", None
    back, back_err, problem = _memcore_call(f"from_tvm of native {name}'s output", from_tvm, ours)
    if problem:
        return problem, pure
    if back_err is not None:
        return f"native-vs-text: from_tvm refuses native {name}'s output: {_first_line(back_err)}", pure
    if not structural_equal(back, pure):
        if _printer_renames_explain(back, pure):
            entry = "duplicate-binding-names"
        elif _non_finite_float_attributes_explain(back, pure):  # the inputs differ so already
            entry = "non-finite-float-attribute"
        else:
            return f"native-vs-text: native {name} differs from {name} on the text", pure
        if listed is not None:
            listed.append(entry)
    return None, pure


_IDENT = re.compile(r"[A-Za-z_]\w*\Z")


def _printer_renames_explain(ours, text_side) -> bool:
    """Whether two memcore modules are equal but for names in their PrimFunc texts, each name
    of ``ours`` (read from TVM's objects) being, one to one, itself or itself plus ``_<n>``
    in ``text_side`` (read from TVM's text, whose printer makes a name that is already
    defined unique so: two bindings named ``lv`` are printed ``lv`` and ``lv_1``, and a
    PrimFunc a pass names its buffers after them follows; DIFFERENCES.md, the bridge,
    ``duplicate-binding-names``). The names align per PrimFunc (each is named after the
    bindings of its own call, so one name of ``ours`` may be ``lv`` in one PrimFunc and
    ``lv_1`` in another), and the function's own name, which structural equality ignores,
    is not compared (a pass may name two PrimFuncs alike in their texts and the module
    apart). The PrimFuncs of ``ours`` whose texts align so are replaced by ``text_side``'s
    and the modules compared again, so any other difference still counts."""
    from ..ir import IRModule, structural_equal
    from ..ir.text.lexer import tokenize
    from ..ir.expr import PrimFunc

    if {gv.name for gv in ours.functions} != {gv.name for gv in text_side.functions}:
        return False
    patched = {}
    renamed = False
    for gv, f in ours.functions.items():
        g = text_side[gv.name]
        if type(f) is PrimFunc and type(g) is PrimFunc and f.text is not None and g.text is not None \
                and f.text != g.text:
            toks_a, toks_b = _without_own_name(tokenize(f.text)), _without_own_name(tokenize(g.text))
            if len(toks_a) != len(toks_b) or len(f.params) != len(g.params):
                return False
            forward, backward = {}, {}
            for x, y in zip(toks_a, toks_b):
                if _IDENT.match(x) and _IDENT.match(y):
                    if forward.setdefault(x, y) != y or backward.setdefault(y, x) != x:
                        return False
                    if x != y and not re.fullmatch(re.escape(x) + r"_[0-9]+", y):
                        return False
                    renamed |= x != y
                elif x != y:
                    return False
            f = g
        patched[gv] = f
    if not renamed:
        return False
    return structural_equal(IRModule(patched, ours.attrs, ours.global_infos), text_side)


def _without_own_name(toks: list) -> list:
    """The tokens of a PrimFunc text without the function's name (the one after ``def``)."""
    try:
        i = toks.index("def")
    except ValueError:
        return toks
    return toks[:i + 1] + toks[i + 2:]


def _native_vs_tvm(name, m, ours, our_err, theirs, their_err, diffs, info) -> str | None:
    """The native pass equals TVM's, or the difference is listed (recognised by name)."""
    if ours is None and theirs is None:
        return None
    if ours is not None and theirs is not None:
        mismatch = _module_mismatch(ours, theirs)
        if mismatch is None:
            return None
    elif our_err is not None:
        info.setdefault("refused", []).append(name)
        mismatch = f"memcore raises {_first_line(our_err)}, TVM's pass returns"
    else:
        mismatch = f"TVM's pass raises {_first_line(their_err)}, memcore's returns"
    listed = listed_difference(name, m, ours, our_err, theirs, their_err, diffs)
    if listed is None and "Type metadata is not set for type `ffi.Function`" in mismatch:
        listed = "attribute-holding-a-function"  # TVM's own comparison cannot hash the function
    if listed:
        info["listed"].append(listed)
        return None
    return f"difference: {name}: {mismatch}"


def _module_mismatch(ours, theirs) -> str | None:
    """None when the two ``tvm.IRModule`` are structurally equal, as a whole or function by
    function (TVM's DataflowUseInplaceCalls shares TIR vars between the PrimFuncs it derives
    from one legalization, which a whole-module comparison maps twice), else TVM's message."""
    import tvm

    try:
        tvm.ir.assert_structural_equal(ours, theirs, map_free_vars=True)
        return None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - ValueError, or TVM's comparison failing
        mismatch = _first_line(exc)
    names = sorted(gv.name_hint for gv in theirs.functions)
    if sorted(gv.name_hint for gv in ours.functions) != names:
        return mismatch
    for name in names:
        try:
            tvm.ir.assert_structural_equal(ours[name], theirs[name], map_free_vars=True)
        except MemoryError:
            raise
        except Exception:  # noqa: BLE001
            return mismatch
    return None


def listed_difference(name, m, ours, our_err, theirs, their_err, diffs) -> str | None:
    """The DIFFERENCES.md entry explaining why memcore's native pass ``name`` and TVM's
    differ on ``m`` (``ours``/``theirs`` the outputs, ``our_err``/``their_err`` the errors,
    one of each pair None; ``diffs`` the StaticPlanBlockMemory differences that apply), or
    None when no entry does.

    Recognised: StaticPlanBlockMemory's ``device-pools``, ``dominating-storage`` and
    ``duplicate-cross-block-leaf`` (:func:`~memcore_py.transform.static_plan_block_memory.
    differences_from_tvm`) and its ``vdevice`` global infos; the DeadCodeElimination inside
    AttachAttrLayoutFreeBuffers calling a direct call of a PrimFunc impure where TVM calls it
    pure (``dce-direct-prim-func-call``: ``m`` has a PrimFunc that stores to no buffer, and
    TVM's DeadCodeElimination turns memcore's output into TVM's); ``unplanned-module-kept`` (the
    native pass returned some functions of ``m`` as they are, and TVM's output holds them
    rebuilt by TVM's mutator -- normalized, a declared return type the body's type is not a
    base of replaced by the body's --, every other function equal to the native pass's);
    ``leading-scalar``
    (TVM's DataflowUseInplaceCalls fails "In-place index ... is out of range");
    ``packed-call-type-from-annotation`` (TVM's KillAfterLastUse fails on an argument typed
    ``R.Any`` and returns the native pass's output once every packed call's type is spelled
    as its ``ty_args``: :func:`_packed_call_types_explain`); the bridge's
    typed refusals of what memcore's IR cannot hold (``TVMConversionError``), LowerAllocTensor's
    refusal of a tensor of 2^64 bytes or more, StaticPlanBlockMemory's refusals of nested
    functions and of sizes needing a sign condition.
    """
    from ..errors import IRError, PassError
    from ..tvm import TVMConversionError

    if name == "StaticPlanBlockMemory" and diffs:
        return ",".join(sorted(diffs))
    if name == "StaticPlanBlockMemory" and ours is not None and theirs is not None and _has_vdevices(m):
        return "vdevice-global-infos"
    if ours is not None and theirs is not None and _kept_functions_explain(m, ours, theirs):
        return "unplanned-module-kept"
    if their_err is not None and name == "DataflowUseInplaceCalls" and "In-place index" in str(their_err):
        return "leading-scalar"
    if name == "KillAfterLastUse" and ours is not None and their_err is not None \
            and _PACKED_CALL_ANY.search(str(their_err)) \
            and _packed_call_types_explain(m, ours):
        return "packed-call-type-from-annotation"
    if name == "AttachAttrLayoutFreeBuffers" and ours is not None and theirs is not None \
            and _dce_purity_explains(m, ours, theirs):
        return "dce-direct-prim-func-call"
    if isinstance(our_err, TVMConversionError):
        return "bridge-not-modelled"
    if name == "LowerAllocTensor" and isinstance(our_err, IRError) and "int64" in str(our_err):
        return "allocation-of-2^64-bytes"
    if name == "StaticPlanBlockMemory" and isinstance(our_err, PassError):
        text = str(our_err)
        if "lambda" in text or "nested" in text.lower():
            return "nested-functions-not-supported"
        if "tir_non_negative_var" in text:
            return "sign-condition-size-not-supported"
    return None


def _with_packed_call_types(mod) -> tuple:
    """``(module, n)``: ``mod`` (a ``tvm.IRModule``) with each of its ``n`` calls of an
    ``ExternFunc`` that have no ``ty_args`` given its type as its ``ty_args``, through TVM's
    own mutator."""
    import tvm
    from tvm import relax

    spelled = []

    @relax.expr_functor.mutator
    class _Spell(relax.PyExprMutator):
        def visit_call_(self, call):
            call = super().visit_call_(call)
            if isinstance(call, relax.Call) and isinstance(call.op, relax.ExternFunc) and len(call.ty_args) == 0:
                spelled.append(call)
                return relax.Call(call.op, call.args, call.attrs, [call.ty])
            return call

    spell = _Spell(mod)
    funcs = {gv: spell.visit_expr(f) if isinstance(f, relax.Function) else f for gv, f in mod.functions.items()}
    return tvm.IRModule(funcs, attrs=mod.attrs, global_infos=mod.global_infos), len(spelled)


#: TVM's error when its binding canonicalization re-derives a packed call's type as ``R.Any``.
_PACKED_CALL_ANY = re.compile(r"Argument \d+ type mismatch: .*, given R\.Any")


def _packed_call_types_explain(m, ours, tvm_pass=None) -> bool:
    """Whether TVM's KillAfterLastUse fails on ``m`` only because ``m`` holds a packed call
    (a call of an ``ExternFunc``) without ``ty_args`` (DIFFERENCES.md, the bridge,
    ``packed-call-type-from-annotation``): TVM's parser gives such a call its binding's
    annotation as its type, and the pass's binding canonicalization, rebuilding the call
    with an argument substituted, derives ``R.Any`` for it. Recognised when TVM's pass on
    ``m`` with those types spelled as ``ty_args`` returns the native output ``ours`` with
    them spelled the same way (compared as text where TVM's comparison cannot hash a
    function-valued attribute). ``tvm_pass`` (``tvm.IRModule -> tvm.IRModule``) stands for
    TVM's pass, e.g. a chain ending with it."""
    import tvm
    from tvm import relax

    try:
        spelled, n = _with_packed_call_types(m)
        if not n:
            return False
        theirs = (tvm_pass or relax.transform.KillAfterLastUse())(spelled)
        mine = _with_packed_call_types(ours)[0]
        try:
            tvm.ir.assert_structural_equal(mine, theirs, map_free_vars=True)
            return True
        except TypeError as exc:  # TVM cannot hash a function-valued attribute: compare the texts
            return "ffi.Function" in str(exc) and mine.script() == theirs.script()
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - not equal, or TVM's pass fails on the spelled module too
        return False


def _has_vdevices(m) -> bool:
    try:
        return bool(m.global_infos) and "vdevice" in m.global_infos
    except Exception:  # noqa: BLE001 - a module without global infos
        return False


def _dce_purity_explains(m, ours, theirs) -> bool:
    """Whether ``m`` has a PrimFunc storing to no buffer (a call of it is pure for TVM's
    DeadCodeElimination, impure for memcore's) and TVM's DeadCodeElimination on ``ours``
    gives ``theirs``."""
    import tvm
    from tvm import relax

    store_free = [f for f in m.functions.values()
                  if isinstance(f, tvm.tirx.PrimFunc) and (isinstance(f.body, tvm.tirx.Evaluate)
                                                           or "] = " not in f.script())]
    if not store_free:
        return False
    try:
        tvm.ir.assert_structural_equal(relax.transform.DeadCodeElimination()(ours), theirs, map_free_vars=True)
        return True
    except Exception:  # noqa: BLE001 - not equal, or TVM's pass fails on it
        return False


def _kept_functions_explain(m, ours, theirs) -> bool:
    """Whether the native output ``ours`` and TVM's ``theirs`` differ only in functions the
    native pass returned as they are in ``m`` (the same objects), which TVM's holds rebuilt
    as TVM's ``ExprMutator`` rebuilds every function it visits (its body is a new object, so
    always): normalized (``relax.transform.Normalize``), and given no return type -- the
    constructor then takes the body's, erased to the parameters' symbolic variables -- where
    the declared one is not a base of the body's type (``ExprMutator::VisitExpr_(const
    FunctionNode*)``). Every other function, and the module's attributes and global infos,
    must equal TVM's."""
    import tvm
    import tvm_ffi
    from tvm import relax

    try:
        names = sorted(gv.name_hint for gv in theirs.functions)
        if sorted(gv.name_hint for gv in ours.functions) != names:
            return False
        if not (tvm_ffi.structural_equal(ours.attrs, theirs.attrs)
                and tvm_ffi.structural_equal(ours.global_infos, theirs.global_infos)):
            return False
        in_m = {gv.name_hint for gv in m.functions}
        rebuilt = None
        kept = False
        for name in names:
            if name in in_m and ours[name].same_as(m[name]):
                if rebuilt is None:
                    rebuilt = relax.transform.Normalize()(m)
                f = rebuilt[name]
                if isinstance(f, relax.Function) and relax.analysis.type_base_check(
                        f.ret_ty, f.body.ty) != relax.analysis.BaseCheckResult.PASS:
                    f = relax.Function(f.params, f.body, None, f.is_pure, f.attrs)
                tvm.ir.assert_structural_equal(f, theirs[name], map_free_vars=True)
                kept = True
            else:
                tvm.ir.assert_structural_equal(ours[name], theirs[name], map_free_vars=True)
        return kept
    except Exception:  # noqa: BLE001 - not equal, or TVM cannot normalize it
        return False


def _check_chain(planned_ours, planned_theirs, info) -> str | None:
    """LowerAllocTensor then KillAfterLastUse natively on the native plan (the hand-over
    between native passes) equal TVM's on TVM's plan, but for functions no native pass
    changed, which TVM's chain holds rebuilt (``unplanned-module-kept``)."""
    from tvm import relax

    from .. import tvm as mtvm

    lowered, _, problem = _memcore_call("native LowerAllocTensor after StaticPlanBlockMemory",
                                        mtvm.LowerAllocTensor(), planned_ours)
    if problem or lowered is None:
        return problem
    killed, _, problem = _memcore_call("native KillAfterLastUse after LowerAllocTensor",
                                       mtvm.KillAfterLastUse(tvm_scoping=True), lowered)
    if problem or killed is None:
        return problem
    def chain(mod):
        return relax.transform.KillAfterLastUse()(relax.transform.LowerAllocTensor()(mod))

    theirs, err = _tvm_call(chain, planned_theirs)
    if err is not None:
        if _PACKED_CALL_ANY.search(str(err)) and _packed_call_types_explain(planned_theirs, killed, chain):
            info["listed"].append("packed-call-type-from-annotation")
            return None
        return (f"difference: chain: TVM's LowerAllocTensor + KillAfterLastUse raise {_first_line(err)}, "
                "memcore's return")
    mismatch = _module_mismatch(killed, theirs)
    if mismatch and "Type metadata is not set for type `ffi.Function`" not in mismatch:  # TVM cannot compare
        if _kept_functions_explain(planned_ours, killed, theirs):
            info["listed"].append("unplanned-module-kept")
            return None
        return f"difference: chain StaticPlanBlockMemory -> LowerAllocTensor -> KillAfterLastUse: {mismatch}"
    return None


def _check_arena(m, pure_in) -> str | None:
    """Arena-mode StaticPlanBlockMemory: native equals text, and the plan verifies (in the
    functions that had no storage before: the storages a module already has are not the
    pass's plan)."""
    from ..ir.expr import Function
    from ..planning.check import collect_planned_tensors, verify_planned
    from .. import tvm as mtvm

    kwargs = {"mode": "arena", "time_limit": None}
    ours, our_err, problem = _memcore_call("native StaticPlanBlockMemory(mode='arena')",
                                           mtvm.StaticPlanBlockMemory(**kwargs), m)
    if problem:
        return problem
    problem, pure = _native_vs_text("StaticPlanBlockMemory", kwargs, ours, our_err, pure_in)
    if problem or pure is None:
        return problem
    for fname, func in pure.functions.items():
        if isinstance(func, Function) and not _has_storages(pure_in[fname]):
            _, err, problem = _memcore_call("verify_planned", lambda f=func, n=fname: verify_planned(
                collect_planned_tensors(f, n)))
            if problem:
                return problem
            if err is not None:
                return f"verify: arena plan of {fname!r}: {_first_line(err)}"
    return None



def _has_storages(func) -> bool:
    """Whether ``func`` already calls ``R.memory.alloc_storage``."""
    from ..planning.check import collect_planned_tensors

    try:
        return bool(collect_planned_tensors(func).storages)
    except Exception:  # noqa: BLE001 - a storage the checker cannot read: not a fresh plan either
        return True
