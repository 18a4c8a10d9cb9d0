"""Memory timeline plots (memcore_py.planning.plot), rendered with the Agg backend: axes,
one rectangle per tensor at the coordinates worked out by hand, the lower-bound and total
lines at the right height, rasterised panels for large plans, PNG/SVG/PDF files, bad input."""
import sys

import numpy as np
import pytest

import memcore
from memcore_py.errors import MemcoreError, PlanningError
from memcore_py.examples.models import load_model
from memcore_py.planning.peak_report import timelines
from memcore_py.planning.plot import PlotDependencyError, plot_offsets, plot_plan
from memcore_py.testing.memory_programs import chain_module
from memcore_py.transform.static_plan_block_memory import plan_block_memory

try:  # the plot extra
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.collections import PolyCollection
    from matplotlib.image import AxesImage
except ImportError:
    matplotlib = None

#: Every test but the missing-matplotlib one needs the extra.
needs_matplotlib = pytest.mark.skipif(matplotlib is None, reason="matplotlib (the plot extra) is not installed")


def rectangles(ax):
    """``[(x0, x1, y0, y1)]`` of the paths of the axes' one PolyCollection, sorted."""
    (coll,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    out = []
    for path in coll.get_paths():
        v = path.vertices
        out.append((v[:, 0].min(), v[:, 0].max(), v[:, 1].min(), v[:, 1].max()))
    return sorted(out)


def line(ax, prefix):
    (ln,) = [ln for ln in ax.lines if ln.get_label().startswith(prefix)]
    return ln


@needs_matplotlib
def test_chain_rectangles_and_lines(tmp_path):
    # chain_module(4, width=4): alloc 16 B live [0, 7], alloc1 8 B [3, 7], alloc2 16 B
    # [6, 10] (alloc3 is returned: not planned). All three live at step 6, so TVM mode gives
    # each its own storage, in creation order: bases 0, 16, 24; the bound is 40 bytes.
    fig = plot_plan(chain_module(4, width=4), modes=("tvm",), out=tmp_path / "chain.png")
    (ax,) = fig.axes
    assert rectangles(ax) == [(0, 8, 0, 16), (3, 8, 16, 24), (6, 11, 24, 40)]
    lb = line(ax, "lower bound")
    assert list(lb.get_ydata()) == [40, 40] and lb.get_linestyle() == "--"
    assert list(line(ax, "allocated").get_ydata()) == [40, 40]
    # the live-bytes profile: 16 at steps 0-2, 24 at 3-5, 40 at 6-7, 16 at 8-10, 0 after
    prof = line(ax, "live bytes")
    xs, ys = prof.get_xdata(), prof.get_ydata()
    at = {int(x0): y for x0, x1, y in zip(xs[::2], xs[1::2], ys[::2])}
    assert [at[t] for t in range(13)] == [16, 16, 16, 24, 24, 24, 40, 40, 16, 16, 16, 0, 0]
    assert ax.get_xlabel() == "step" and "tvm: 40 B" in ax.get_title()
    data = (tmp_path / "chain.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


@needs_matplotlib
def test_modes_side_by_side_share_the_byte_axis():
    mod = load_model("resnet50")
    fig = plot_plan(mod)
    tvm_ax, arena_ax = fig.axes
    assert tvm_ax.get_title().startswith("main | tvm:") and arena_ax.get_title().startswith("main | arena:")
    assert tvm_ax.get_ylim() == arena_ax.get_ylim()
    (tl,) = timelines(mod)
    for ax, mode in ((tvm_ax, "tvm"), (arena_ax, "arena")):
        p = tl.placements[mode]
        assert len(rectangles(ax)) == tl.n_tensors == 56
        expected = sorted(zip(tl.start.tolist(), (tl.end + 1).tolist(), p.address.tolist(), (p.address + tl.size).tolist()))
        assert rectangles(ax) == expected
        assert list(line(ax, "lower bound").get_ydata()) == [tl.lower_bound] * 2
        assert list(line(ax, "allocated").get_ydata()) == [p.total_bytes] * 2
    # the arena is at the bound on ResNet-50, TVM mode well above it
    assert line(arena_ax, "allocated").get_ydata()[0] == tl.lower_bound
    assert line(tvm_ax, "allocated").get_ydata()[0] > 1.5 * tl.lower_bound


@needs_matplotlib
def test_planned_modules_and_timelines_as_sources():
    mod = chain_module(6, width=8)
    planned = [plan_block_memory(mod, "tvm"), plan_block_memory(mod, "arena")]
    a = plot_plan(planned)
    b = plot_plan(timelines(mod))
    assert [rectangles(ax) for ax in a.axes] == [rectangles(ax) for ax in b.axes]
    assert len(plot_plan(planned, modes=("arena",)).axes) == 1


@needs_matplotlib
def test_rasterised_above_max_artists():
    fig = plot_plan(chain_module(4, width=4), modes=("tvm",), max_artists=2)
    (ax,) = fig.axes
    assert not [c for c in ax.collections if isinstance(c, PolyCollection)]
    (img,) = [a for a in ax.get_children() if isinstance(a, AxesImage)]
    cells = np.asarray(img.get_array())
    painted = cells[..., 3] > 0
    # extent: steps 0..12 on x, bytes 0..40 on y; 12 columns (one per step), 900 rows
    assert img.get_extent() == [0.0, 12.0, 0.0, 40.0]
    h = cells.shape[0]
    assert painted[0, 0] and painted[h // 2, 4] and not painted[0, 9] and painted[h - 1, 7]
    assert not painted[:, 11:].any()  # nothing after step 10


@needs_matplotlib
def test_flat_problem():
    # three buffers: a [0, 2] 100 B at 0, b [1, 3] 50 B at 100, c [3, 4] 100 B at 0
    start, end, size, offset = [0, 1, 3], [2, 3, 4], [100, 50, 100], [0, 100, 0]
    fig = plot_offsets(start, end, size, offset, names=["a", "b", "c"])
    (ax,) = fig.axes
    assert rectangles(ax) == [(0, 3, 0, 100), (1, 4, 100, 150), (3, 5, 0, 100)]
    assert list(line(ax, "lower bound").get_ydata()) == [150, 150]  # steps 1-2: a + b
    assert list(line(ax, "allocated").get_ydata()) == [150, 150]
    assert {t.get_text() for t in ax.texts} == {"a", "b", "c"}


@needs_matplotlib
def test_large_flat_plan_is_a_few_artists(tmp_path):
    rng = np.random.default_rng(1)
    n = 5_000
    start = rng.integers(0, 2_000, n)
    end = start + rng.integers(0, 50, n)
    size = rng.integers(1, 4096, n)
    plan = memcore.plan_offsets(start, end, size)
    fig = plot_offsets(start, end, size, plan.offset, arena_bytes=plan.arena_bytes, out=tmp_path / "big.png")
    (ax,) = fig.axes
    assert len(ax.get_children()) < 30 and not ax.collections
    assert list(line(ax, "lower bound").get_ydata()) == [plan.lower_bound] * 2
    assert (tmp_path / "big.png").stat().st_size > 1000


@needs_matplotlib
@pytest.mark.parametrize("suffix, magic", [(".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_vector_formats(tmp_path, suffix, magic):
    out = tmp_path / f"plan{suffix}"
    plot_plan(chain_module(4, width=4), out=out)
    assert out.read_bytes()[:len(magic)] == magic


@pytest.mark.parametrize("kwargs, match", [
    ({"color_by": "size"}, "color_by must be one of"),
    ({"max_artists": -1}, "max_artists must be"),
    ({"out": "plan.gif"}, "must end in one of .png, .svg, .pdf"),
    ({"functions": ["nope"]}, "no Relax function named 'nope'"),
    ({"modes": ("fast",)}, "planning mode must be one of"),
])
@needs_matplotlib
def test_bad_options(kwargs, match):
    with pytest.raises(PlanningError, match=match):
        plot_plan(chain_module(2, width=4), **kwargs)


@needs_matplotlib
def test_unwritable_file(tmp_path):
    with pytest.raises(PlanningError, match="cannot write plot"):
        plot_plan(chain_module(2, width=4), out=tmp_path / "missing" / "x.png")


@needs_matplotlib
def test_bad_flat_arrays():
    with pytest.raises(memcore.InvalidArrayError):
        plot_offsets([0, 1], [1], [4, 4], [0, 0])
    with pytest.raises(PlanningError, match="offset must be 2 integers"):
        plot_offsets([0, 1], [1, 2], [4, 4], [0])
    with pytest.raises(PlanningError, match="offset must be >= 0"):
        plot_offsets([0, 1], [1, 2], [4, 4], [0, -8])


def test_missing_matplotlib(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(PlotDependencyError, match=r'pip install "memcore\[plot\]"') as info:
        plot_plan(chain_module(2, width=4))
    assert isinstance(info.value, MemcoreError) and isinstance(info.value, ImportError)
    with pytest.raises(PlotDependencyError):
        plot_offsets([0], [1], [4], [0])


@needs_matplotlib
def test_graph_plan_relay_and_arena():
    import gzip
    import json

    from _helpers import REPO_ROOT
    from memcore_py.frontend import read_graph_json
    from memcore_py.planning.graph_plan_memory import graph_plan_memory
    from memcore_py.planning.peak_report import graph_timeline

    with gzip.open(REPO_ROOT / "tests" / "data" / "relay" / "resnet18_O3.json.gz", "rt") as fh:
        g = read_graph_json(json.dumps(json.load(fh)["graph_json"]))
    tl = graph_timeline(graph_plan_memory(g, mode="arena"), graph_plan_memory(g, mode="relay"))
    relay_ax, arena_ax = plot_plan([tl]).axes  # the reference mode on the left
    assert "| relay:" in relay_ax.get_title() and "| arena:" in arena_ax.get_title()
    assert len(rectangles(relay_ax)) == len(rectangles(arena_ax)) == tl.n_tensors
    assert list(line(arena_ax, "lower bound").get_ydata()) == [tl.lower_bound] * 2
