"""The kernels must be compiled extension modules, never a silent pure-Python fallback."""

import importlib
import importlib.machinery

import pytest


@pytest.mark.parametrize("name", ["memcore._liveness", "memcore._tokens", "memcore._verify"])
def test_kernel_module_is_compiled(name):
    module = importlib.import_module(name)
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    assert module.__file__.endswith(suffixes), module.__file__
    assert not module.__file__.endswith(".py")


@pytest.mark.parametrize(
    "public, kernel",
    [
        ("memcore.liveness", "memcore._liveness"),
        ("memcore.tokens", "memcore._tokens"),
        ("memcore.verify", "memcore._verify"),
    ],
)
def test_public_module_uses_compiled_kernel(public, kernel):
    wrapper = importlib.import_module(public)
    short = kernel.rsplit(".", 1)[1]
    assert getattr(wrapper, short) is importlib.import_module(kernel)


def test_public_names_resolve():
    import memcore

    for name in [
        "live_intervals", "max_live_bytes", "live_profile", "plan_tokens", "TokenPlan",
        "EV_REQUEST", "EV_DECREF", "verify_offsets", "verify_tokens",
        "read_minimalloc_csv", "write_minimalloc_csv",
    ]:
        assert getattr(memcore, name) is not None
    assert (memcore.EV_REQUEST, memcore.EV_DECREF) == (0, 1)


@pytest.mark.parametrize("name", ["memcore_py.analysis._storage_walk", "memcore_py.transform._alloc_rewrite"])
def test_python_layer_helpers_are_compiled(name):
    """StaticPlanBlockMemory's Init walk and allocation rewrite are compiled helpers in the
    packages whose job they do (built by setup.py like the kernels), with no Python fallback."""
    from memcore_py._compiled import load_compiled

    module = load_compiled(name)
    assert module is importlib.import_module(name)
    assert module.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), module.__file__


def test_missing_compiled_helper_says_how_to_build():
    from memcore_py._compiled import load_compiled

    with pytest.raises(ImportError, match=r"memcore_py\.analysis\._no_such_helper is missing.*pip install -e \."):
        load_compiled("memcore_py.analysis._no_such_helper")
