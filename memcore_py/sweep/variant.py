"""What a sweep plans and what it answers: :class:`Variant` and :class:`SweepResult`.

Design
------
A :class:`Variant` names a model and the options of one plan. Its model is resolved once, in the
calling process, into a :class:`ModelSource` (:func:`model_source`): the input's kind and its
content (the text of a TVMScript module, the bytes' path of a ``.pt2`` / ``.onnx`` file) with a
digest of that content. The digest and the options are the variant's identity
(:func:`key_prefix` + :func:`bind_text`): two variants with equal identities have equal results,
which the cache (:mod:`.cache`) and the batching of the executors (:mod:`.executors`) rely on.
Everything a worker receives is plain data (strings, ints, dicts), so any executor can ship it.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import MemcoreError

__all__ = ["Variant", "SweepResult", "ModelSource", "SweepError", "model_source", "key_prefix", "bind_text", "MODES"]

#: What a variant plans: StaticPlanBlockMemory in TVM's mode, memcore's arena mode, or both.
MODES = ("tvm", "arena", "both")


class SweepError(MemcoreError, ValueError):
    """A sweep's arguments are wrong (a variant's option, an executor name, jobs)."""


@dataclass(frozen=True)
class Variant:
    """One plan of a sweep.

    Parameters
    ----------
    model : str, path or IRModule
        A shipped model name (:func:`memcore_py.examples.models.list_models`), a path (a
        TVMScript module, ``*.gz`` decompressed; a ``torch.export.save`` ``.pt2``; an ``.onnx``
        file; a graph-executor ``.json`` / ``.json.gz``, planned by Relay's GraphPlanMemory,
        ``tvm_bytes`` being Relay's; a MiniMalloc ``.csv`` problem, packed by
        :func:`memcore.plan_offsets`, with no TVM mode) or a memcore
        :class:`~memcore_py.ir.IRModule`. The last two have no symbolic dimensions and no
        lowering (``bind`` must be empty, ``fuse`` changes nothing).
    bind : dict, optional
        Symbolic dimension name -> int: the plan's figures evaluated at these values (what one
        compiled dynamic model allocates at that shape, as ``memcore plan --bind``; a dimension
        with an upper bound is planned at its bound).
    mode : {"arena", "tvm", "both"}
        Which StaticPlanBlockMemory plans to make (the lower bound is always computed).
    fuse : bool
        Lower a high-level module with ``LowerForPlanning(fuse=True)`` (TVM's FuseOps grouping).
    time_limit : float or None, default None
        Arena mode's anytime search per pool beyond the heuristics; None keeps the best heuristic
        only, so that a result does not depend on the machine's load (serial and pooled runs
        give identical results).
    """

    model: object
    bind: dict | None = None
    mode: str = "arena"
    fuse: bool = False
    time_limit: float | None = None

    def __post_init__(self):
        if self.mode not in MODES:
            raise SweepError(f"Variant.mode must be one of {', '.join(MODES)}; got {self.mode!r}")
        if not isinstance(self.fuse, bool):
            raise SweepError(f"Variant.fuse must be a bool; got {self.fuse!r}")
        if self.time_limit is not None and (
            isinstance(self.time_limit, bool)
            or not isinstance(self.time_limit, (int, float))
            or not self.time_limit > 0
        ):
            raise SweepError(f"Variant.time_limit must be None or a number > 0; got {self.time_limit!r}")
        bind = self.bind
        if bind is not None:
            if not isinstance(bind, dict):
                raise SweepError(f"Variant.bind must be a dict of name -> int; got {type(bind).__name__}")
            for k, v in bind.items():
                if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise SweepError(f"Variant.bind: {k!r}={v!r}: each entry must be a name and an int >= 0")

    def options(self) -> dict:
        """The plan's options as plain data (sorted ``bind``)."""
        return {"bind": dict(sorted((self.bind or {}).items())), "mode": self.mode, "fuse": self.fuse,
                "time_limit": self.time_limit}


@dataclass(frozen=True)
class ModelSource:
    """A variant's model as a worker reads it: ``kind`` (``"text"``, ``"pt2"``, ``"onnx"``,
    ``"graph-json"``, ``"csv"``), ``label`` (the name shown), ``text`` (a TVMScript module) or
    ``path`` (a file read by the worker), and ``digest`` (SHA-256 of the content)."""

    kind: str
    label: str
    digest: str
    text: str | None = None
    path: str | None = None


@dataclass(frozen=True, slots=True)
class SweepResult:
    """The answer for one variant (bytes summed over the module's Relax functions).

    ``tvm_bytes`` / ``arena_bytes`` are None when the mode did not plan them or the total is
    symbolic at ``bind`` (then ``tvm_expr`` / ``arena_expr`` hold it, in bytes); ``seconds`` is
    the time of the plan (reading and lowering the model, done once per model and worker, not
    included); ``error`` is the message of what failed for this variant (None on success), the
    figures then None; ``cached``: the result came from the cache.
    """

    index: int
    model: str
    bind: dict = field(default_factory=dict)
    mode: str = "arena"
    fuse: bool = False
    tvm_bytes: int | None = None
    arena_bytes: int | None = None
    lower_bound: int | None = None
    tvm_expr: str | None = None
    arena_expr: str | None = None
    seconds: float = 0.0
    error: str | None = None
    cached: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    def same_plan(self, other: "SweepResult") -> bool:
        """Whether ``other`` answers the same (everything but the times and the cache flag)."""
        mine, theirs = self.to_dict(), other.to_dict()
        for key in ("seconds", "cached"):
            mine.pop(key)
            theirs.pop(key)
        return mine == theirs


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def model_source(model) -> ModelSource:
    """Resolve a :class:`Variant`'s ``model`` (see there) into a :class:`ModelSource`.

    Raises
    ------
    SweepError
        A model that is none of the accepted kinds.
    MemcoreError
        The file cannot be read (a :class:`~memcore_py.errors.FrontendError`), or the
        ``IRModule`` cannot be printed.
    """
    from ..errors import FrontendError
    from ..ir import IRModule

    if isinstance(model, IRModule):
        text = model.script()
        return ModelSource("text", "<IRModule>", _digest(text.encode()), text=text)
    if not isinstance(model, (str, os.PathLike)):
        raise SweepError(f"a variant's model must be a shipped model name, a path or an IRModule; "
                         f"got {type(model).__name__}")
    name = os.fspath(model)
    path = Path(name)
    if not path.exists():
        from ..examples.models import list_models, model_text

        if name in list_models():
            text = model_text(name)
            return ModelSource("text", name, _digest(text.encode()), text=text)
        raise FrontendError(f"{name}: no such file, and not a shipped model "
                            f"(shipped: {', '.join(list_models())})")
    lower = name.lower()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FrontendError(f"{name}: cannot read: {exc.strerror or exc}") from None
    for suffixes, kind in (((".pt2",), "pt2"), ((".json", ".json.gz"), "graph-json"), ((".csv",), "csv")):
        if lower.endswith(suffixes):
            return ModelSource(kind, name, _digest(data), path=str(path.resolve()))
    if lower.endswith(".onnx"):
        return ModelSource("onnx", name, _digest(data), path=str(path.resolve()))
    if lower.endswith(".gz"):
        import gzip

        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise FrontendError(f"{name}: not a gzip file: {exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrontendError(f"{name}: not UTF-8 text (byte {exc.start}): a TVMScript module was expected") from None
    return ModelSource("text", name, _digest(data), text=text)


def key_prefix(source: ModelSource, options: dict, version: str) -> str:
    """A variant's identity (the cache's key) is this prefix followed by :func:`bind_text` of its
    ``bind``: the model's kind and content digest (up to the first ``|``), the options
    (:meth:`Variant.options`) but ``bind``, and the memcore version. The variants of one plan
    share it."""
    return (f"{source.kind}:{source.digest}|{options['mode']}|fuse={options['fuse']}|"
            f"time_limit={options['time_limit']!r}|memcore={version}|bind=")


def bind_text(bind: dict) -> str:
    """The end of a variant's identity (:func:`key_prefix`): ``n=128,m=4`` (``bind`` sorted,
    as :meth:`Variant.options` gives it)."""
    return ",".join(f"{name}={value}" for name, value in bind.items())
