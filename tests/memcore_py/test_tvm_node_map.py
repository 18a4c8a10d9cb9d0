"""The node maps of the TVM-native passes (``memcore_py.tvm._node_map``) against ``dict``.

``NodeMap`` (memcore node -> TVM object address) and ``AddrMap`` (address -> Python object)
replace dicts in the bridge; whatever a dict would answer after a sequence of operations,
they must answer too, and they must hold (and release) references like a dict. No TVM needed.
"""
import gc
import random
import sys

import pytest

from memcore_py.ir.expr import Call, Var, VarBinding
from memcore_py.ir.op import get_op
from memcore_py.ir.types import TensorType
from memcore_py.tvm._node_map import AddrMap, NodeMap


def _nodes(n):
    ty = TensorType((4,), "float32", 1, None)
    op = get_op("relax.builtin.alloc_tensor")
    out = []
    for i in range(n):
        v = Var(f"v{i}", ty)
        out.append(v)
        if i % 3 == 1:
            out.append(VarBinding(v, v))
        if i % 5 == 2:
            out.append(Call(op, (), None, (), ty))
    return out


def _same(m, d, probes):
    assert len(m) == len(d)
    for k in probes:
        assert (k in m) == (k in d)
        assert m.get(k, "absent") == d.get(k, "absent")
        if k in d:
            assert m[k] == d[k]
        else:
            with pytest.raises(KeyError):
                m[k]
    assert sorted(map(id, m.keys())) == sorted(map(id, d.keys()))


@pytest.mark.parametrize("seed", range(6))
def test_node_map_answers_as_a_dict(seed):
    rng = random.Random(seed)
    nodes = _nodes(400 + 300 * seed)  # past several doublings of the table
    tuples = [("symbolic-vars", f"f{i}") for i in range(20)]
    m, d = NodeMap(), {}
    for step in range(3000):
        if rng.random() < 0.85:
            k = rng.choice(nodes)
            v = rng.randrange(1, 1 << 58) * 16
        else:
            k = rng.choice(tuples)
            v = {"n": step} if rng.random() < 0.5 else step + 1
        m[k] = v
        d[k] = v
        if step % 500 == 0:
            _same(m, d, nodes[:50] + tuples)
    # equal tuples built anew are found by value, as in a dict
    _same(m, d, nodes + [("symbolic-vars", f"f{i}") for i in range(25)])


def test_node_map_holds_and_releases_its_keys():
    v = Var("x", None)
    before = sys.getrefcount(v)
    m = NodeMap()
    m[v] = 4096
    m[v] = 8192  # a second store does not take a second reference
    assert sys.getrefcount(v) == before + 1
    assert m[v] == 8192
    del m
    assert sys.getrefcount(v) == before


def test_node_map_untracks_what_it_stores():
    nodes = _nodes(50)
    extra = {"n": 1}
    m = NodeMap()
    for i, k in enumerate(nodes):
        m[k] = 16 * (i + 1)
    m[("symbolic-vars", "main")] = extra
    assert not any(gc.is_tracked(k) for k in nodes)
    assert not gc.is_tracked(extra)


def test_node_map_refuses_a_non_address_for_a_node_with_an_address():
    v = Var("x", None)
    m = NodeMap()
    m[v] = 64
    with pytest.raises(TypeError, match="already maps to an address"):
        m[v] = "not an address"
    assert m[v] == 64


@pytest.mark.parametrize("seed", range(4))
def test_addr_map_answers_as_a_dict(seed):
    rng = random.Random(seed)
    addresses = [rng.randrange(1, 1 << 47) * 16 for _ in range(500 + 500 * seed)]
    values = _nodes(100) + ["s", 3, None]
    m, d = AddrMap(), {}
    for _ in range(4000):
        k = rng.choice(addresses)
        v = rng.choice(values)
        m[k] = v
        d[k] = v
    probes = addresses + [0, -16, 12345678901234567, 1 << 70, "x"]
    for k in probes:
        assert (k in m) == (k in d)
        assert m.get(k, "absent") is d.get(k, "absent")
    assert len(m) == len(d)
    assert sorted(m.items(), key=lambda kv: kv[0]) == sorted(d.items(), key=lambda kv: kv[0])
    copy = AddrMap(d)
    assert all(copy[k] is v for k, v in d.items())


def test_addr_map_holds_and_releases_its_values():
    v = Var("x", None)
    w = Var("y", None)
    before_v, before_w = sys.getrefcount(v), sys.getrefcount(w)
    m = AddrMap()
    m[4096] = v
    assert sys.getrefcount(v) == before_v + 1
    m[4096] = w  # replacing releases the old value
    assert sys.getrefcount(v) == before_v and sys.getrefcount(w) == before_w + 1
    del m
    assert sys.getrefcount(w) == before_w


def test_addr_map_keys_are_addresses():
    m = AddrMap()
    with pytest.raises(KeyError):
        m[0] = "x"
    for bad in (-16, 1 << 64, "16", 16.0):
        with pytest.raises(KeyError, match="object addresses"):
            m[bad] = "x"
    assert m.get(0) is None and len(m) == 0
