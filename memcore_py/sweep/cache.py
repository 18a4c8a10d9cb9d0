"""The sweep's result cache on disk: :class:`ResultCache`.

Design
------
One SQLite file (the standard library's ``sqlite3``) maps a variant's identity
(:func:`~.variant.key_prefix` and :func:`~.variant.bind_text`: the model content's digest, the
options, memcore's version) to its figures (:data:`FIGURES`, one column each; the rest of a
result is the variant's own). Only the calling process opens it (workers never do), so there is
no locking between processes; a sweep reads every key it needs before planning (one range query
per model) and writes the new results in one transaction after. A result with an ``error`` is
not stored: a model that failed is tried again next time (the failure may have been an
environment's, such as a missing optional package). A file that is not a cache of this layout
is an error naming it, never overwritten.
"""
from __future__ import annotations

import sqlite3
from dataclasses import fields
from pathlib import Path

from .variant import SweepError, SweepResult

__all__ = ["ResultCache"]

_TABLE = "memcore_sweep_figures"
#: The figures of a result the cache stores, in column order: the fields of a
#: :class:`~.variant.SweepResult` from ``tvm_bytes`` to ``seconds``, in its order (a hit is
#: rebuilt positionally).
FIGURES = ("tvm_bytes", "arena_bytes", "lower_bound", "tvm_expr", "arena_expr", "seconds")
_FIELDS = [f.name for f in fields(SweepResult)]
if _FIELDS[_FIELDS.index(FIGURES[0]):][:len(FIGURES) + 2] != [*FIGURES, "error", "cached"]:
    raise ImportError("memcore_py.sweep.cache: FIGURES is not SweepResult's field order")


class ResultCache:
    """Results by variant identity in the SQLite file ``path`` (created when missing).

    Raises
    ------
    SweepError
        ``path`` cannot be opened as such a cache.
    """

    def __init__(self, path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path))
            self._db.execute(f"CREATE TABLE IF NOT EXISTS {_TABLE} (key TEXT PRIMARY KEY, {', '.join(FIGURES)})")
            self._db.execute(f"SELECT key, {', '.join(FIGURES)} FROM {_TABLE} LIMIT 1").fetchall()
        except (sqlite3.Error, OSError) as exc:
            raise SweepError(f"cache {self.path}: cannot be used as a sweep cache: {exc}") from None

    def get_many(self, keys) -> dict:
        """key -> the figures (a tuple in :data:`FIGURES` order), for the keys found. Keys
        that share their model (the part before the first ``|``,
        :func:`~.variant.key_prefix`) are read with one range query over that model's rows,
        the few others by name."""
        wanted = set(keys)
        by_model: dict = {}
        for key in wanted:
            by_model.setdefault(key.partition("|")[0], []).append(key)
        columns = ", ".join(FIGURES)
        out = {}
        few = []
        for model, group in by_model.items():
            if len(group) < 64:
                few.extend(group)
                continue
            rows = self._db.execute(f"SELECT key, {columns} FROM {_TABLE} WHERE key >= ? AND key < ?",
                                    (model + "|", model + "}")).fetchall()  # "}" follows "|"
            out.update((row[0], row[1:]) for row in rows if row[0] in wanted)
        for start in range(0, len(few), 500):  # SQLite's limit on bound parameters
            chunk = few[start:start + 500]
            rows = self._db.execute(f"SELECT key, {columns} FROM {_TABLE} WHERE key IN ({','.join('?' * len(chunk))})",
                                    chunk).fetchall()
            out.update((row[0], row[1:]) for row in rows)
        return out

    def put_many(self, items) -> int:
        """Store ``(key, result dict)`` pairs whose result has no error; returns how many."""
        rows = [(k, *[r[f] for f in FIGURES]) for k, r in items if r.get("error") is None]
        with self._db:
            self._db.executemany(f"INSERT OR REPLACE INTO {_TABLE} (key, {', '.join(FIGURES)}) "
                                 f"VALUES ({', '.join('?' * (len(FIGURES) + 1))})", rows)
        return len(rows)

    def __len__(self) -> int:
        return self._db.execute(f"SELECT COUNT(*) FROM {_TABLE}").fetchone()[0]

    def close(self) -> None:
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
