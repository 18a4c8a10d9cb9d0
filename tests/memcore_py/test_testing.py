"""memcore_py.testing: deterministic, well-formed random programs covering every construct."""
import pytest

import memcore_py
from memcore_py.errors import IRError
from memcore_py.ir import Function, PrimFunc, assert_structural_equal, structural_equal, well_formed_report
from memcore_py.testing import FEATURES, count_bindings, module_features, random_lowered_module, random_module
from _helpers import tvm_from_source

SEEDS = range(200)


def _size(seed):
    return 1 + (seed * 37) % 160


@pytest.mark.parametrize("gen", [random_module, random_lowered_module])
def test_well_formed_with_exact_binding_count_over_200_seeds(gen):
    for seed in SEEDS:
        mod = gen(seed, _size(seed))
        assert well_formed_report(mod) == [], (gen.__name__, seed)
        assert count_bindings(mod) == _size(seed), (gen.__name__, seed)


@pytest.mark.parametrize("gen", [random_module, random_lowered_module])
def test_deterministic_per_seed(gen):
    for seed in (0, 7, 123):
        a, b = gen(seed, 150), gen(seed, 150)
        assert_structural_equal(a, b)
        assert a.script() == b.script()  # same names too
    assert not structural_equal(gen(1, 150), gen(2, 150))


def test_every_construct_is_covered():
    found = set()
    for seed in range(40):
        found |= module_features(random_module(seed, 120))
    assert found == set(FEATURES)
    lowered = set()
    for seed in range(40):
        lowered |= module_features(random_lowered_module(seed, 120))
    assert {"alloc_tensor", "dps_call", "call_packed", "reshape", "tuple", "get_item", "scope_local",
            "symbolic_dim", "float32", "float16", "int32", "int8", "bool", "binding_block"} <= lowered
    assert "dataflow_block" not in lowered and "if" not in lowered


def test_random_module_shape():
    mod = random_module(5, 200)
    names = [gv.name for gv in mod.functions]
    assert "main" in names
    relax = [f for f in mod.functions.values() if isinstance(f, Function)]
    prims = [f for f in mod.functions.values() if isinstance(f, PrimFunc)]
    assert 2 <= len(relax) <= 3 and prims
    assert all(p.text is None for p in prims)  # signature-only PrimFuncs


def test_lowered_module_is_one_impure_plain_function():
    mod = random_lowered_module(4, 300)
    main = mod["main"]
    assert main.attrs["relax.force_pure"] is True
    assert len(main.body.blocks) == 1 and type(main.body.blocks[0]).__name__ == "BindingBlock"


@pytest.mark.parametrize("gen", [random_module, random_lowered_module])
def test_print_parse_round_trip(gen):
    for seed in range(0, 30, 3):
        mod = gen(seed, 90)
        assert_structural_equal(mod, memcore_py.parse(mod.script()))


def test_smallest_modules():
    for seed in range(10):
        assert count_bindings(random_module(seed, 1)) == 1
        assert count_bindings(random_lowered_module(seed, 1)) == 1


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "10"])
def test_bad_sizes(bad):
    with pytest.raises(IRError, match="n_bindings must be an int >= 1"):
        random_module(0, bad)
    with pytest.raises(IRError, match="n_bindings must be an int >= 1"):
        random_lowered_module(0, bad)


@pytest.mark.oracle
def test_tvm_parses_and_accepts_generated_modules(tvm):
    from tvm.relax.analysis import _ffi_api

    for seed in range(3):
        for gen in (random_module, random_lowered_module):
            text = gen(seed, 60).script()
            mod = tvm_from_source(text, check_well_formed=False)
            _ffi_api.well_formed(mod, True)  # raises when TVM finds it ill-formed
