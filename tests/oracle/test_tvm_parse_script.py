"""``memcore_py.tvm.compat.parse_script``: TVM's script parser on the texts memcore writes, with
the ``T.prim_func`` decorator resolved to its dialect alone on a supported TVM. The objects are
TVM's own parse of the same text (``tvm.script.from_source``), flags from the decorator
included; on another TVM version the public entry runs; a text TVM refuses is refused."""
from __future__ import annotations

import inspect

import pytest

tvm = pytest.importorskip("tvm")

import memcore_py.tvm as mtvm  # noqa: E402
from memcore_py.tvm import compat  # noqa: E402
from memcore_py.tvm._api import tvm_api  # noqa: E402

pytestmark = pytest.mark.oracle

HEADER = "# from tvm.script import tirx as T\n\n"

PRIVATE_ADD = HEADER + """@T.prim_func(private=True, s_tir=True)
def add_inplace(A: T.Buffer((T.int64(4), T.int64(8)), "float32"), B: T.Buffer((T.int64(8),), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i0, i1 in T.grid(T.int64(4), T.int64(8)):
        with T.sblock("T_add"):
            v0, v1 = T.axis.remap("SS", [i0, i1])
            T.reads(A[v0, v1], B[v1])
            T.writes(A[v0, v1])
            A[v0, v1] = A[v0, v1] + B[v1]
"""

PUBLIC_SYMBOLIC = HEADER + """@T.prim_func(s_tir=True)
def relu(var_x: T.handle, var_y: T.handle):
    n = T.int64()
    x = T.match_buffer(var_x, (n,), "float16")
    y = T.match_buffer(var_y, (n,), "float16")
    for i in range(n):
        with T.sblock("relu"):
            vi = T.axis.spatial(n, i)
            y[vi] = T.max(x[vi], T.float16(0))
"""


@pytest.fixture(autouse=True)
def fresh_gate():
    compat.reset()
    yield
    compat.reset()


@pytest.mark.parametrize("text", [PRIVATE_ADD, PUBLIC_SYMBOLIC], ids=["private", "public-symbolic"])
def test_parse_script_gives_tvms_own_parse(text):
    ours = compat.parse_script(tvm_api(), text)
    theirs = tvm.script.from_source(text)
    tvm.ir.assert_structural_equal(ours, theirs)
    assert ("global_symbol" in ours.attrs) == ("global_symbol" in theirs.attrs)


def test_parse_script_does_not_capture_the_call_stack(monkeypatch):
    """The decorator's stack capture is what the shortcut leaves out: with ``inspect.stack``
    refused, the supported path still parses, to TVM's own object."""
    theirs = tvm.script.from_source(PRIVATE_ADD)

    def refused(*args, **kwargs):
        raise AssertionError("inspect.stack called")

    monkeypatch.setattr(inspect, "stack", refused)
    tvm.ir.assert_structural_equal(compat.parse_script(tvm_api(), PRIVATE_ADD), theirs)


def test_other_tvm_version_takes_the_public_entry(monkeypatch):
    calls = []
    real = tvm.script.from_source

    def spy(text, *args, **kwargs):
        calls.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(tvm, "__version__", "0.28.0")
    monkeypatch.setattr(tvm.script, "from_source", spy)
    out = compat.parse_script(tvm_api(), PRIVATE_ADD)
    assert calls == [PRIVATE_ADD]
    tvm.ir.assert_structural_equal(out, real(PRIVATE_ADD))


def test_a_text_tvm_refuses_is_refused():
    with pytest.raises(Exception, match="undefined_name|not defined|Undefined"):
        compat.parse_script(tvm_api(), PRIVATE_ADD.replace("A[v0, v1] + B[v1]", "A[v0, v1] + undefined_name[v1]"))


def test_native_inplace_pass_output_is_unchanged_by_the_shortcut(monkeypatch):
    """DataflowUseInplaceCalls through the bridge writes its in-place PrimFuncs with
    parse_script; the module equals the one written through ``tvm.script.from_source``."""
    from memcore_py.examples.models import highlevel_model_text

    mod = tvm.script.from_source(highlevel_model_text("gpt2_small"))
    fast = mtvm.DataflowUseInplaceCalls()(mod)
    monkeypatch.setattr(compat._DECISION, "script_globals", False)
    public = mtvm.DataflowUseInplaceCalls()(mod)
    tvm.ir.assert_structural_equal(fast, public)
