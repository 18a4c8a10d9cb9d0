"""Random Relax functions of tensor bindings, for the oracles of the binding rules
(CanonicalizeBindings' planning, DeadCodeElimination's unused bindings).

:class:`RandomBindings` writes a function body statement by statement: element-wise calls,
rebindings, tuples of two tensors and get-items of them, match_casts to the value's own type,
``If`` s whose branches have bindings of their own, and an optional dataflow block. A subclass
adds the statement kinds its rule tells apart (a method ``kind_<name>`` each, listed by
:meth:`RandomBindings.kinds`) and wraps the body in a module (:meth:`RandomBindings.module`).
"""
from __future__ import annotations

import random

__all__ = ["RandomBindings", "T4", "PAIR"]

#: The tensor type of every tensor the programs bind.
T4 = 'R.Tensor((4,), dtype="float32")'
#: The tuple type of every tuple they bind.
PAIR = f"R.Tuple({T4}, {T4})"


class RandomBindings:
    """A random function body (see the module docstring).

    Parameters
    ----------
    seed : int
    """

    #: The kinds of statement, repeated to weigh them (a subclass extends them).
    KINDS = ("add", "add", "rebind", "tuple", "get", "cast_same")
    #: Kinds only where a scope may open (not in a dataflow block or a branch).
    SCOPE_KINDS = ("if",)

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.n = 0

    def fresh(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def kinds(self, allow_scope: bool, in_dataflow: bool) -> list:
        """The kinds a statement may be here."""
        return list(self.KINDS) + (list(self.SCOPE_KINDS) if allow_scope else [])

    def statement(self, out: list, tensors: list, pairs: list, allow_scope: bool, in_dataflow: bool = False):
        """Append one random statement's lines to ``out``; the variables it binds join
        ``tensors`` or ``pairs``."""
        kind = self.rng.choice(self.kinds(allow_scope, in_dataflow))
        getattr(self, "kind_" + kind)(out, self.fresh(), tensors, pairs, in_dataflow)

    # -- the common kinds ---------------------------------------------------------------------
    def kind_add(self, out, v, tensors, pairs, in_dataflow):
        out.append(f"{v}: {T4} = R.add({self.rng.choice(tensors)}, {self.rng.choice(tensors)})")
        tensors.append(v)

    def kind_rebind(self, out, v, tensors, pairs, in_dataflow):
        src = self.rng.choice(tensors + pairs)
        out.append(f"{v} = {src}")
        (tensors if src in tensors else pairs).append(v)

    def kind_tuple(self, out, v, tensors, pairs, in_dataflow):
        out.append(f"{v}: {PAIR} = ({self.rng.choice(tensors)}, {self.rng.choice(tensors)})")
        pairs.append(v)

    def kind_get(self, out, v, tensors, pairs, in_dataflow):
        if not pairs:
            return self.kind_add(out, v, tensors, pairs, in_dataflow)
        out.append(f"{v}: {T4} = {self.rng.choice(pairs)}[{self.rng.randrange(2)}]")
        tensors.append(v)

    def kind_cast_same(self, out, v, tensors, pairs, in_dataflow):
        out.append(f"{v}: {T4} = R.match_cast({self.rng.choice(tensors)}, {T4})")
        tensors.append(v)

    def kind_if(self, out, v, tensors, pairs, in_dataflow):
        out.append("if c:")
        branches = ([], [])
        for branch in branches:
            bt, bp = list(tensors), list(pairs)
            for _ in range(self.rng.randrange(1, 4)):
                self.statement(branch, bt, bp, False)
            r = self.fresh()
            branch.append(f"{r}: {T4} = {self.branch_result(bt, len(tensors))}")
            branch.append(f"{v} = {r}")
        out.extend("    " + line for line in branches[0])
        out.append("else:")
        out.extend("    " + line for line in branches[1])
        tensors.append(v)

    def branch_result(self, tensors: list, n_outer: int) -> str:
        """The value of a branch's result (``tensors[n_outer:]`` are the branch's own)."""
        return self.rng.choice(tensors[max(n_outer - 1, 0):])

    def dataflow_output(self, out: list, name: str) -> str:
        """The variable the dataflow block outputs for its tensor ``name``."""
        return name

    # -- the body -------------------------------------------------------------------------------
    def body(self, params_tensors=("x", "y"), params_pairs=(), dataflow_probability=0.5) -> list:
        """The body's lines: statements, maybe a dataflow block, statements, a tuple returned."""
        rng = self.rng
        body, tensors, pairs = [], list(params_tensors), list(params_pairs)
        for _ in range(rng.randrange(3, 8)):
            self.statement(body, tensors, pairs, True)
        if rng.random() < dataflow_probability:
            df, dt, dp = [], list(tensors), list(pairs)
            for _ in range(rng.randrange(2, 6)):
                self.statement(df, dt, dp, False, True)
            own = dt[len(tensors):]
            outs = [self.dataflow_output(df, o) for o in rng.sample(own, k=min(2, len(own)))]
            if outs:
                df.append(f"R.output({', '.join(outs)})")
                body.append("with R.dataflow():")
                body.extend("    " + line for line in df)
                tensors.extend(outs)
        for _ in range(rng.randrange(1, 5)):
            self.statement(body, tensors, pairs, True)
        ret = self.fresh()
        body.append(f"{ret} = ({rng.choice(tensors)}, {rng.choice(tensors + pairs)})")
        body.append(f"return {ret}")
        return body

    @staticmethod
    def indent(lines: list, depth: int = 8) -> str:
        return "\n".join(" " * depth + line for line in lines)
