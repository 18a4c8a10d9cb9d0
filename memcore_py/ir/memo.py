"""The memo tables that outlive one call: one owner, one size policy.

Design
------
Several stages keep a value computed from an immutable key across calls, because computing
it again costs more than a dict lookup: a shared ``IntImm`` for a storage size, the validated
sizing of a tensor type, the parsed annotations of PrimFunc text, the TVM objects of shared
leaves, ... Each such table is a plain ``dict`` (the hot paths read it with ``dict.get`` or
``PyDict_GetItem``) that belongs to a :class:`MemoGroup` registered in the one
:class:`MemoTables` object :data:`MEMO`. A group holds the tables that must be emptied
together (a table of TVM objects and a table of their addresses, say).

The policy is the same for every group: when a group holds :attr:`MemoTables.max_entries`
entries, it is emptied (in place, so callers may keep references to its dicts) before the next
entry goes in. A memo table never changes a result, only how often a value is computed again:
``MEMO.clear()`` empties every table, and tests may call it at any point.

Per-call tables (a conversion's node maps, a rewrite's shape table) are not memo tables: they
die with the call and are not registered here.
"""
from __future__ import annotations

__all__ = ["MemoGroup", "MemoTables", "MEMO"]


class MemoGroup:
    """Memo tables emptied together (module docstring); made by :meth:`MemoTables.group`.

    Attributes
    ----------
    name : str
        ``"<module>.<what>"``, unique among the groups.
    tables : tuple of dict
        The group's tables; ``table`` is the first.
    on_clear : callable or None
        Called after the tables are emptied, for what the group's owner keeps beside them
        (the objects whose addresses a table holds, say).
    """

    __slots__ = ("name", "tables", "table", "on_clear", "_owner")

    def __init__(self, owner: MemoTables, name: str, n_tables: int, on_clear=None):
        self.name = name
        self.tables = tuple({} for _ in range(n_tables))
        self.table = self.tables[0]
        self.on_clear = on_clear
        self._owner = owner

    def __len__(self) -> int:
        return sum(map(len, self.tables))

    def trim(self) -> None:
        """Empty the group if it is full (before a series of inserts through its dicts)."""
        if len(self) >= self._owner.max_entries:
            self.clear()

    def put(self, key, value, table: int = 0):
        """``tables[table][key] = value`` under the size policy; returns ``value``."""
        if len(self) >= self._owner.max_entries:
            self.clear()
        self.tables[table][key] = value
        return value

    def clear(self) -> None:
        for t in self.tables:
            t.clear()
        if self.on_clear is not None:
            self.on_clear()

    def __repr__(self):
        return f"MemoGroup({self.name!r}, entries={len(self)})"


class MemoTables:
    """The owner of every memo table (module docstring): :data:`MEMO`.

    Parameters
    ----------
    max_entries : int
        Entries a group may hold before it is emptied.
    """

    def __init__(self, max_entries: int = 1 << 16):
        self.max_entries = max_entries
        self._groups: dict[str, MemoGroup] = {}

    def group(self, name: str, n_tables: int = 1, on_clear=None) -> MemoGroup:
        """Register the group ``name`` of ``n_tables`` empty tables and return it
        (``on_clear``: :class:`MemoGroup`'s).

        Raises
        ------
        ValueError
            ``name`` is registered already (one module owns each group), or ``n_tables < 1``.
        """
        if name in self._groups:
            raise ValueError(f"memo group {name!r} is registered already")
        if n_tables < 1:
            raise ValueError(f"a memo group needs at least one table; got n_tables={n_tables}")
        g = self._groups[name] = MemoGroup(self, name, n_tables, on_clear)
        return g

    def clear(self) -> None:
        """Empty every table of every group."""
        for g in self._groups.values():
            g.clear()

    def sizes(self) -> dict:
        """Group name -> entries held now."""
        return {name: len(g) for name, g in self._groups.items()}


#: The library's memo tables.
MEMO = MemoTables()
