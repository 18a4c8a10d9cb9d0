"""memcore.io: MiniMalloc CSV reading and writing."""

import numpy as np
import pytest

from memcore import InvalidArrayError, max_live_bytes, read_minimalloc_csv, write_minimalloc_csv
from memcore.io import Problem

from _helpers import MINIMALLOC_DIR as DATA


def _write(tmp_path, text, name="p.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_read_half_open_to_inclusive(tmp_path):
    path = _write(tmp_path, "id,lower,upper,size\n0,0,3,8\n1,3,5,16\n")
    problem = read_minimalloc_csv(path)
    assert isinstance(problem, Problem)
    ids, start, end, size = problem
    assert ids.tolist() == [0, 1]
    assert start.tolist() == [0, 3]
    assert end.tolist() == [2, 4]  # upper - 1
    assert size.tolist() == [8, 16]
    assert problem.offset is None
    assert len(problem) == 2
    assert all(a.dtype == np.int64 for a in problem)
    # [0, 3) and [3, 5) do not overlap (half-open), so the peak is one buffer.
    assert max_live_bytes(start, end, size) == 16


def test_read_minimalloc_example_file():
    # The README example of google/minimalloc: string ids, capacity 12, max-live 12.
    problem = read_minimalloc_csv(DATA / "input.12.csv")
    assert problem.ids.tolist() == ["b1", "b2", "b3", "b4", "b5"]
    assert max_live_bytes(problem.start, problem.end, problem.size) == 12


def test_read_challenging_file_max_live_matches_readme():
    # bench/data/minimalloc/README.md: C.1048576.csv has 203 buffers and max-live 1039360.
    problem = read_minimalloc_csv(DATA / "C.1048576.csv")
    assert len(problem) == 203
    assert max_live_bytes(problem.start, problem.end, problem.size) == 1039360


def test_read_any_column_order_offsets_and_blank_lines(tmp_path):
    path = _write(tmp_path, "size, upper ,offset,id,lower\n\n8,3,0,7,0\n 16 ,5,8,9,1\n\n")
    problem = read_minimalloc_csv(path)
    assert problem.ids.tolist() == [7, 9]
    assert problem.start.tolist() == [0, 1]
    assert problem.end.tolist() == [2, 4]
    assert problem.size.tolist() == [8, 16]
    assert problem.offset.tolist() == [0, 8]


def test_read_header_only(tmp_path):
    problem = read_minimalloc_csv(_write(tmp_path, "id,lower,upper,size\n"))
    assert len(problem) == 0 and problem.start.dtype == np.int64


@pytest.mark.parametrize("seed", range(5))
def test_round_trip(tmp_path, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 50))
    start = rng.integers(-1, 100, n)
    end = start + rng.integers(0, 10, n)
    size = rng.integers(0, 2**40, n)
    offset = rng.integers(0, 2**40, n)
    path = tmp_path / "out.csv"
    write_minimalloc_csv(path, start, end, size, offset=offset)
    problem = read_minimalloc_csv(path)
    assert problem.ids.tolist() == list(range(n))
    np.testing.assert_array_equal(problem.start, start)
    np.testing.assert_array_equal(problem.end, end)
    np.testing.assert_array_equal(problem.size, size)
    np.testing.assert_array_equal(problem.offset, offset)


def test_write_format_and_ids(tmp_path):
    path = tmp_path / "out.csv"
    write_minimalloc_csv(path, [0, 3], [2, 4], [8, 16], ids=["a", "b"])
    assert path.read_text() == "id,lower,upper,size\na,0,3,8\nb,3,5,16\n"
    write_minimalloc_csv(path, [], [], [])
    assert path.read_text() == "id,lower,upper,size\n"


@pytest.mark.parametrize(
    "text, match",
    [
        ("", r"p.csv:1: the header must be id,lower,upper,size; got an empty file"),
        ("id,lower,upper\n0,0,1\n",
         r"p.csv:1: the header must name the columns id,lower,upper,size \(and optionally "
         r"offset\); got 'id,lower,upper' \(missing size\)"),
        ("id,lower,upper,size,gaps\n", r"p.csv:1: .*\(unknown gaps\)"),
        ("id,lower,upper,size,size\n", r"p.csv:1: .*\(repeated size\)"),
        ("\nid,lower,upper,size\n0,0,1\n",
         r"p.csv:3: a row must have 4 fields \(id,lower,upper,size\); got 3"),
        ("id,lower,upper,size\n0,0,1,8\n1,0,2,8.5\n",
         r"p.csv:3: size must be an integer; got '8.5'"),
        ("id,lower,upper,size\n0,x,1,8\n", r"p.csv:2: lower must be an integer; got 'x'"),
        ("id,lower,upper,size\n0,4,4,8\n",
         r"p.csv:2: upper must be > lower \(the lifespan \[lower, upper\) is half-open\); "
         r"got lower=4, upper=4"),
        ("id,lower,upper,size\n0,0,4,8\n1,0,4,-8\n", r"p.csv:3: size must be >= 0; got -8"),
        ("id,lower,upper,size,offset\n0,0,4,8,-1\n", r"p.csv:2: offset must be >= 0; got -1"),
        ("id,lower,upper,size\n0,0,4,99999999999999999999\n",
         r"p.csv:2: size must fit in int64; got 99999999999999999999"),
        ("id,lower,upper,size\nb1,0,4,8\nb1,1,4,8\n",
         r"p.csv:3: id must be unique; got 'b1' again \(first on line 2\)"),
    ],
)
def test_read_rejects(tmp_path, text, match):
    with pytest.raises(InvalidArrayError, match=match):
        read_minimalloc_csv(_write(tmp_path, text))


def test_read_error_is_a_value_error(tmp_path):
    with pytest.raises(ValueError):
        read_minimalloc_csv(_write(tmp_path, "a,b\n"))


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (([0, 2], [1, 1], [8, 8]), {}, r"end must be >= start; got end\[1\] = 1 < start\[1\] = 2"),
        (([0], [1], [-8]), {}, r"size must be >= 0; got size\[0\] = -8"),
        (([0], [1, 2], [8]), {}, r"end must have length 1 \(len\(start\)\)"),
        (([0], [2**63 - 1], [8]), {},
         r"end must be < 9223372036854775807 to write upper = end \+ 1; got end\[0\]"),
        (([0], [1], [8]), {"offset": [0, 0]}, r"offset must have length 1 \(len\(start\)\)"),
        (([0], [1], [8]), {"ids": ["a", "b"]}, r"ids must have length 1 \(len\(start\)\)"),
        (([0], [1], [8]), {"ids": ["a,b"]},
         r"ids\[0\] must be a non-empty id without commas or newlines; got 'a,b'"),
        (([0], [1], [8]), {"ids": [0.5]},
         r"ids must be a 1-D array of integers or strings; got float64"),
    ],
)
def test_write_rejects(tmp_path, args, kwargs, match):
    with pytest.raises(InvalidArrayError, match=match):
        write_minimalloc_csv(tmp_path / "out.csv", *args, **kwargs)
