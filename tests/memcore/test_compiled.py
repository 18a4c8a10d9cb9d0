"""Every extension setup.py declares must be a compiled module, never a silent pure-Python
fallback. The list comes from setup.py's ``EXTENSIONS`` dict (read with ``ast``, not
imported), so a new extension is covered as soon as it is declared."""

import ast
import importlib
import importlib.machinery

import pytest

from _helpers import REPO_ROOT

SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _declared_extensions() -> dict:
    """setup.py's ``EXTENSIONS`` (extension name -> spec), evaluated as a literal."""
    path = REPO_ROOT / "setup.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "EXTENSIONS" for t in targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path}: no module-level EXTENSIONS = {{...}} assignment")


EXTENSIONS = _declared_extensions()
ENGINE_KERNELS = sorted(n for n in EXTENSIONS if n.startswith("memcore."))
PYTHON_LAYER_HELPERS = sorted(n for n in EXTENSIONS if n.startswith("memcore_py."))


def test_setup_declares_the_known_extensions():
    """The ast read found the dict (a sanity floor, not the list under test)."""
    assert {"memcore._liveness", "memcore._offsets", "memcore._tokens", "memcore._verify"} <= set(EXTENSIONS)
    assert set(EXTENSIONS) == set(ENGINE_KERNELS) | set(PYTHON_LAYER_HELPERS), sorted(EXTENSIONS)


@pytest.mark.parametrize("name", sorted(EXTENSIONS))
def test_declared_sources_exist_and_match_the_name(name):
    sources = EXTENSIONS[name]["sources"]
    for source in sources:
        assert (REPO_ROOT / source).is_file(), source
    assert sources[0] == name.replace(".", "/") + ".pyx", sources


@pytest.mark.parametrize("name", ENGINE_KERNELS)
def test_kernel_module_is_compiled(name):
    module = importlib.import_module(name)
    assert module.__file__.endswith(SUFFIXES), module.__file__


@pytest.mark.parametrize("kernel", ENGINE_KERNELS)
def test_public_module_uses_compiled_kernel(kernel):
    """``memcore.x`` (the validating wrapper) calls ``memcore._x``."""
    package, short = kernel.rsplit(".", 1)
    wrapper = importlib.import_module(f"{package}.{short.lstrip('_')}")
    assert getattr(wrapper, short) is importlib.import_module(kernel)


def test_public_names_resolve():
    import memcore

    for name in [
        "live_intervals", "max_live_bytes", "live_profile", "plan_tokens", "TokenPlan",
        "EV_REQUEST", "EV_DECREF", "plan_offsets", "OffsetPlan", "verify_offsets", "verify_tokens",
        "read_minimalloc_csv", "write_minimalloc_csv",
    ]:
        assert getattr(memcore, name) is not None
    assert (memcore.EV_REQUEST, memcore.EV_DECREF) == (0, 1)


@pytest.mark.parametrize("name", PYTHON_LAYER_HELPERS)
def test_python_layer_helpers_are_compiled(name):
    """Compiled helpers of the Python layer live in the packages whose job they do (built by
    setup.py like the kernels) and load through ``load_compiled``, with no Python fallback."""
    from memcore_py._compiled import load_compiled

    module = load_compiled(name)
    assert module is importlib.import_module(name)
    assert module.__file__.endswith(SUFFIXES), module.__file__


def test_missing_compiled_helper_says_how_to_build():
    from memcore_py._compiled import load_compiled

    with pytest.raises(ImportError, match=r"memcore_py\.analysis\._no_such_helper is missing.*pip install -e \."):
        load_compiled("memcore_py.analysis._no_such_helper")
