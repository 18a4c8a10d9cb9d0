"""MiniMalloc CSV problems: read them into, and write them from, the flat-array contract.

Format (google/minimalloc, see bench/data/minimalloc/README.md): a header naming the columns
``id,lower,upper,size`` in any order, plus an optional ``offset`` column (a solution), then
one buffer per row. The lifespan is *half-open* ``[lower, upper)``; memcore's intervals are
inclusive (:mod:`memcore.liveness`), so ``start = lower`` and ``end = upper - 1``.

Every value except ``id`` must be a base-10 integer. Ids are kept as int64 when every id
is an integer, else as strings (MiniMalloc's own example uses ``b1``, ``b2``, ...); they
must be unique. Blank lines are skipped. Errors name ``file:line``.
"""

import csv
import io
from dataclasses import dataclass

import numpy as np

from ._errors import InvalidArrayError
from ._validate import as_int64_array, as_interval_arrays, check_length

__all__ = ["Problem", "read_minimalloc_csv", "write_minimalloc_csv"]

_REQUIRED = ("id", "lower", "upper", "size")
_OPTIONAL = ("offset",)


@dataclass(frozen=True, eq=False)
class Problem:
    """A flat planning problem read from a file.

    Unpacks as ``ids, start, end, size = problem`` (``offset`` is an attribute only).
    """

    ids: np.ndarray
    """int64[n] (or a str array when some id is not an integer): the ``id`` column."""
    start: np.ndarray
    """int64[n]: first step of each buffer (``lower``)."""
    end: np.ndarray
    """int64[n]: last step of each buffer, inclusive (``upper - 1``)."""
    size: np.ndarray
    """int64[n]: bytes of each buffer."""
    offset: np.ndarray | None = None
    """int64[n] when the file has an ``offset`` column (a solved problem), else None."""

    def __iter__(self):
        return iter((self.ids, self.start, self.end, self.size))

    def __len__(self):
        return int(self.ids.shape[0])


def _error(path, line, message):
    return InvalidArrayError(f"{path}:{line}: {message}")


def _parse_ids(path, ids, lines):
    """int64 ids when every id is an integer, else the strings; they must be unique."""
    seen = {}
    for i, name in enumerate(ids):
        if name in seen:
            raise _error(
                path, lines[i], f"id must be unique; got {name!r} again (first on line "
                f"{lines[seen[name]]})"
            )
        seen[name] = i
    try:
        return np.array([int(v) for v in ids], dtype=np.int64)
    except (ValueError, OverflowError):
        return np.array(ids, dtype=str)


def _records(path, reader):
    """The rows of the ``csv.reader`` ``reader``; a row it cannot read (``csv.Error``: on
    Python 3.11+ only a field longer than ``csv.field_size_limit()``, as after a quote that
    is never closed, which runs on to the end of the file) is an :class:`InvalidArrayError`
    naming the line the row starts on."""
    while True:
        first_line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise _error(path, first_line, f"the row cannot be read as CSV: {exc}") from None
        yield row


def read_minimalloc_csv(path):
    """Read a MiniMalloc CSV file into inclusive intervals.

    Parameters
    ----------
    path : str or os.PathLike
        The CSV file.

    Returns
    -------
    Problem
        ``ids``, ``start``, ``end``, ``size`` (int64[n]) and ``offset`` (int64[n] or None);
        unpacks as ``ids, start, end, size``.

    Raises
    ------
    InvalidArrayError
        (a ValueError) naming ``file:line``: an empty file, a header without the columns
        ``id, lower, upper, size`` or with unknown or repeated ones, a row with the wrong
        number of fields, a field that is not an integer, ``upper <= lower``, a negative
        size or offset.
        A file that is not UTF-8 text names the line and byte; a row the ``csv`` module
        cannot read (a field longer than its ``field_size_limit()``, 131,072 characters by
        default, e.g. after a quote that is never closed) names the line the row starts on.
    OSError
        The file cannot be opened.

    Notes
    -----
    One pass with the ``csv`` module, O(n) time (bench/README.md, "Engine: offsets", has
    the measured rate).

    Examples
    --------
    >>> import os, tempfile
    >>> from memcore import read_minimalloc_csv
    >>> path = os.path.join(tempfile.mkdtemp(), "p.csv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("id,lower,upper,size\\n0,0,3,8\\n1,3,5,16\\n")
    >>> ids, start, end, size = read_minimalloc_csv(path)
    >>> start.tolist(), end.tolist(), size.tolist()
    ([0, 3], [2, 4], [8, 16])
    """
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _error(path, data.count(b"\n", 0, exc.start) + 1,
                     f"the file is not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    header = None
    for header in _records(path, reader):
        if any(field.strip() for field in header):
            break
    else:
        raise _error(path, 1, "the header must be id,lower,upper,size; got an empty file")
    names = [h.strip() for h in header]
    header_line = reader.line_num
    unknown = [h for h in names if h not in _REQUIRED + _OPTIONAL]
    missing = [h for h in _REQUIRED if h not in names]
    repeated = sorted({h for h in names if names.count(h) > 1})
    if unknown or missing or repeated:
        problems = []
        if missing:
            problems.append(f"missing {', '.join(missing)}")
        if unknown:
            problems.append(f"unknown {', '.join(unknown)}")
        if repeated:
            problems.append(f"repeated {', '.join(repeated)}")
        raise _error(
            path,
            header_line,
            "the header must name the columns id,lower,upper,size (and optionally "
            f"offset); got {','.join(names)!r} ({'; '.join(problems)})",
        )
    n_cols = len(names)
    rows, lines = [], []
    for row in _records(path, reader):
        if not any(field.strip() for field in row):
            continue
        if len(row) != n_cols:
            raise _error(
                path,
                reader.line_num,
                f"a row must have {n_cols} fields ({','.join(names)}); got {len(row)}",
            )
        values = []
        for name, field in zip(names, row):
            if name == "id":
                values.append(field.strip())
                continue
            try:
                values.append(int(field.strip()))
            except ValueError:
                raise _error(
                    path, reader.line_num, f"{name} must be an integer; got {field!r}"
                ) from None
        rows.append(values)
        lines.append(reader.line_num)

    table = np.array(rows, dtype=object).reshape(len(rows), n_cols)
    columns = {"id": _parse_ids(path, table[:, names.index("id")].tolist(), lines)}
    for k, name in enumerate(names):
        if name == "id":
            continue
        try:
            columns[name] = np.array(table[:, k].tolist(), dtype=np.int64)
        except OverflowError:
            bad = next(i for i, v in enumerate(table[:, k]) if not -(2**63) <= v < 2**63)
            raise _error(
                path, lines[bad], f"{name} must fit in int64; got {table[bad, k]}"
            ) from None
    lower, upper, size = columns["lower"], columns["upper"], columns["size"]
    bad = np.flatnonzero(upper <= lower)
    if bad.size:
        i = int(bad[0])
        raise _error(
            path,
            lines[i],
            f"upper must be > lower (the lifespan [lower, upper) is half-open); got "
            f"lower={int(lower[i])}, upper={int(upper[i])}",
        )
    for name in ("size",) + (("offset",) if "offset" in columns else ()):
        bad = np.flatnonzero(columns[name] < 0)
        if bad.size:
            i = int(bad[0])
            raise _error(path, lines[i], f"{name} must be >= 0; got {int(columns[name][i])}")
    return Problem(
        ids=columns["id"],
        start=lower,
        end=upper - 1,
        size=size,
        offset=columns.get("offset"),
    )


def write_minimalloc_csv(path, start, end, size, offset=None, ids=None):
    """Write inclusive intervals as a MiniMalloc CSV file (``upper = end + 1``).

    Parameters
    ----------
    path : str or os.PathLike
        Output file (overwritten).
    start, end : ndarray of shape (n,), dtype=int64
        Inclusive intervals, ``start <= end < 2**63 - 1``.
    size : ndarray of shape (n,), dtype=int64
        Bytes, ``>= 0``.
    offset : ndarray of shape (n,), dtype=int64, optional
        Written as an ``offset`` column when given (a solution).
    ids : array-like of shape (n,), optional
        The ``id`` column (integers or strings without commas); ``0 .. n-1`` by default.

    Returns
    -------
    None

    Raises
    ------
    InvalidArrayError
        Wrong dtype/shape/length, ``end < start``, ``end`` at the int64 maximum (no
        half-open upper bound exists), or a negative size.

    Notes
    -----
    O(n). :func:`read_minimalloc_csv` reads the file back to the same arrays.

    Examples
    --------
    >>> import os, tempfile
    >>> from memcore import read_minimalloc_csv, write_minimalloc_csv
    >>> path = os.path.join(tempfile.mkdtemp(), "p.csv")
    >>> write_minimalloc_csv(path, [0, 3], [2, 4], [8, 16])
    >>> print(open(path).read(), end="")
    id,lower,upper,size
    0,0,3,8
    1,3,5,16
    """
    start, end, size = as_interval_arrays(start, end, size)
    n = start.shape[0]
    bad = np.flatnonzero(end == np.iinfo(np.int64).max)
    if bad.size:
        i = int(bad[0])
        raise InvalidArrayError(
            f"end must be < {np.iinfo(np.int64).max} to write upper = end + 1; "
            f"got end[{i}] = {int(end[i])}"
        )
    if ids is None:
        id_text = [str(i) for i in range(n)]
    else:
        ids = np.asarray(ids)
        if ids.ndim != 1 or ids.dtype.kind not in "iuU":
            raise InvalidArrayError(
                f"ids must be a 1-D array of integers or strings; got {ids.dtype} array of "
                f"shape {ids.shape}"
            )
        check_length("ids", ids, n, "len(start)")
        id_text = [str(v) for v in ids.tolist()]
        bad = next((i for i, v in enumerate(id_text) if "," in v or "\n" in v or not v), -1)
        if bad >= 0:
            raise InvalidArrayError(
                f"ids[{bad}] must be a non-empty id without commas or newlines; got "
                f"{id_text[bad]!r}"
            )
    names = ["id", "lower", "upper", "size"]
    columns = [start, end + 1, size]
    if offset is not None:
        offset = as_int64_array("offset", offset)
        check_length("offset", offset, n, "len(start)")
        names.append("offset")
        columns.append(offset)
    numbers = np.column_stack(columns).tolist() if n else []
    with open(path, "w", newline="") as f:
        f.write(",".join(names) + "\n")
        f.writelines(
            f"{name},{','.join(map(str, row))}\n" for name, row in zip(id_text, numbers)
        )
