"""Relay's 2-D texture allocator (``TokenAllocator2D``, src/relay/backend/token_allocator.cc).

Design
------
Relay plans tensors in a ``global.texture*`` storage scope apart from flat buffers: each
texture is a (width x height) image of ``channel``-wide texels, flattened from the tensor's
shape by the scope's convention (:func:`texture_shape`). A request scans the free textures
of the same dtype and scope whose width and height are each within a factor 5 of the
request, and picks the one that needs the least *added* extent, then the least *wasted*
extent. A texture that already fits is reused as it is (its token gains the request's
references); one that must grow is taken over by the request's token, which keeps one
extra reference, so a grown texture is never released again (Relay's behaviour, kept).

The scan visits the free list in the iteration order of the ``std::unordered_set<int64_t>``
Relay keeps it in, and Relay's comparison is not a total order, so that order decides which
texture wins. :class:`StdUnorderedSet` reproduces libstdc++'s order (prime bucket counts,
insertion at the front of a bucket, rehash order) for small integer keys; it is checked
against a compiled ``std::unordered_set`` in the tests where a C++ compiler exists.

This is the only allocator of the graph planner written in Python: texture graphs are
small (one texture per activation of a mobile GPU model) and the rule is not the 1-D
window rule of :func:`memcore.plan_tokens`. Flat tokens never come here.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from .graph_model import GraphError

__all__ = ["StdUnorderedSet", "Token2D", "TokenAllocator2D", "texture_shape", "TEXTURE_SCOPES"]

#: Storage scopes with a flattening convention (``DefaultTextureLayoutSeparator``).
TEXTURE_SCOPES = ("global.texture", "global.texture-weight", "global.texture-nhwc")

#: libstdc++'s ``__prime_list`` bucket counts above the fast table (``_M_next_bkt``), as far
#: as any free list of textures needs.
_PRIMES = (
    13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 103, 109,
    113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293, 313, 337,
    359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709, 761, 823, 887, 953, 1031, 1109,
    1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357, 2549, 2753, 2971, 3209, 3469,
    3739, 4027, 4349, 4703, 5087, 5503, 5953, 6427, 6949, 7517, 8123, 8783, 9497, 10273,
    11113, 12011, 12983, 14033, 15173, 16411, 17749, 19183, 20753, 22447, 24281, 26267,
    28411, 30727, 33223, 35933, 38873, 42043, 45481, 49201, 53201, 57557, 62233, 67307,
    72817, 78779, 85229, 92203, 99733, 107897, 116731, 126271, 136607, 147793, 159871,
    172933, 187091, 202409, 218971, 236897, 256279, 277261, 299951, 324503, 351061, 379787,
    410857, 444487, 480881, 520241, 562841, 608903, 658753, 712697, 771049, 834181, 902483,
    976369, 1056323, 1142821, 1236397, 1337629, 1447153, 1565659, 1693859, 1832561,
    1982627, 2144977, 2320627, 2510653, 2716249, 2938679, 3179303,
)
_FAST_BKT = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)


class StdUnorderedSet:
    """A set of non-negative ints that iterates like libstdc++'s ``std::unordered_set<long>``.

    Only what ``TokenAllocator2D`` uses: :meth:`insert`, :meth:`erase`, iteration, ``len``.
    Hash is the identity, bucket = key mod bucket count; a new key goes in front of the
    first key of its bucket, or at the front of the list when the bucket is empty; a rehash
    (max load factor 1, growth factor 2, prime bucket counts) re-links the keys in list
    order by the same rule. Insert is O(n) here (the sets are small).
    """

    def __init__(self):
        self._order: list = []
        self._keys: set = set()
        self._n_bkt = 1
        self._next_resize = 0

    def __len__(self):
        return len(self._order)

    def __iter__(self):
        return iter(tuple(self._order))

    def __contains__(self, key):
        return key in self._keys

    def _next_bkt(self, n: int) -> int:
        if n < len(_FAST_BKT):
            if n == 0:
                return 1
            self._next_resize = _FAST_BKT[n]
            return _FAST_BKT[n]
        i = bisect_left(_PRIMES, n)
        if i >= len(_PRIMES):
            raise GraphError(f"internal error: {n} free textures is beyond the modelled bucket counts")
        self._next_resize = _PRIMES[i]
        return _PRIMES[i]

    def _place(self, order: list, key: int, n_bkt: int) -> None:
        b = key % n_bkt
        for i, k in enumerate(order):
            if k % n_bkt == b:
                order.insert(i, key)
                return
        order.insert(0, key)

    def insert(self, key: int) -> None:
        """``std::unordered_set::insert`` (no effect when present)."""
        if key in self._keys:
            return
        n_elt = len(self._order)
        if n_elt + 1 > self._next_resize:
            min_bkts = max(n_elt + 1, 0 if self._next_resize else 11)
            if min_bkts >= self._n_bkt:
                n = self._next_bkt(max(min_bkts + 1, self._n_bkt * 2))
                new_order: list = []
                for k in self._order:
                    self._place(new_order, k, n)
                self._order = new_order
                self._n_bkt = n
            else:
                self._next_resize = self._n_bkt
        self._place(self._order, key, self._n_bkt)
        self._keys.add(key)

    def erase(self, key: int) -> None:
        """``std::unordered_set::erase`` (no effect when absent)."""
        if key in self._keys:
            self._keys.remove(key)
            self._order.remove(key)


def texture_shape(shape, scope: str, where: str = "texture"):
    """``(width, height, channel)`` of a tensor stored in a texture scope.

    Relay's ``ApplyTexture2DFlattening`` with ``DefaultTextureLayoutSeparator``: the last dim
    is the channel; dims before the separator axis multiply into the height, the others into
    the width. The separator is ``rank - 2`` for ``global.texture``, 1 for
    ``global.texture-weight``, and 2 (1 for rank 3) for ``global.texture-nhwc``.

    Raises
    ------
    GraphError
        An unknown texture scope, a rank too small for the convention, or an empty extent.
    """
    rank = len(shape)
    if scope == "global.texture":
        axis = rank - 2
    elif scope == "global.texture-weight":
        axis = 1
    elif scope == "global.texture-nhwc":
        axis = 1 if rank == 3 else 2
    else:
        raise GraphError(f"{where}: unknown texture scope {scope!r}; expected one of {list(TEXTURE_SCOPES)}")
    if not 0 <= axis < rank or rank < 2:
        raise GraphError(f"{where}: a rank-{rank} tensor cannot be flattened to a {scope!r} texture")
    width = height = 1
    for i in range(rank - 1):
        if i < axis:
            height *= shape[i]
        else:
            width *= shape[i]
    if width <= 0 or height <= 0:
        raise GraphError(f"{where}: texture of shape {tuple(shape)} has an empty extent")
    return width, height, shape[rank - 1]


@dataclass(eq=False)
class Token2D:
    """Relay's ``StorageToken`` for a texture: a reference count, the tensor and its storage."""

    ref_counter: int
    dtype: str
    scope: str
    shape: tuple
    storage_id: int = -1
    where: str = "texture"
    """Names the entry in error messages."""
    entry: int = -1
    """The graph entry the token was made for (-1 outside a graph)."""

    def size_2d(self):
        """``(width, height, channel)`` of this token's own tensor."""
        return texture_shape(self.shape, self.scope, self.where)


@dataclass(eq=False)
class _MemBlock:
    token: Token2D
    x: int
    y: int


class TokenAllocator2D:
    """Port of Relay v0.19 ``TokenAllocator2D``: ``request``, ``alloc``, ``check_for_release``.

    ``blocks`` maps a storage id to its texture (owning token, width ``x``, height ``y``);
    ``free_list`` holds the released storage ids.
    """

    MAX_RATIO = 5

    def __init__(self):
        self.blocks: dict = {}
        self.free_list = StdUnorderedSet()

    def request(self, proto: Token2D):
        """A free texture for ``proto``, or None (then the caller allocates a new one)."""
        width, height, _ = proto.size_2d()
        big = 2**63 - 1
        min_add_x = min_add_y = min_waste_x = min_waste_y = big
        best = -1
        new_x = new_y = 0
        r = self.MAX_RATIO
        for free_id in self.free_list:
            cached = self.blocks[free_id]
            if cached.token.dtype != proto.dtype or cached.token.scope != proto.scope:
                continue
            if width // cached.x > r or cached.x // width > r or height // cached.y > r or cached.y // height > r:
                continue
            nx, ny = max(cached.x, width), max(cached.y, height)
            add_x, add_y = nx - cached.x, ny - cached.y
            waste_x, waste_y = nx - width, ny - height
            # Relay's test, kept as written: it is not a total order, so the scan order matters.
            if ((min_add_x > 0 and add_x < min_add_x) or (min_add_y > 0 and add_y < min_add_y)
                    or (min_add_x == add_x and waste_x < min_waste_x)
                    or (min_add_y == add_y and waste_y < min_waste_y)):
                min_add_x, min_add_y, min_waste_x, min_waste_y = add_x, add_y, waste_x, waste_y
                best, new_x, new_y = free_id, nx, ny
        if min_add_x == 0 and min_add_y == 0:
            self.free_list.erase(best)
            block = self.blocks[best]
            block.token.ref_counter += proto.ref_counter
            return block.token
        if min_add_x <= width or min_add_y <= height:
            self.free_list.erase(best)
            proto.ref_counter += 1
            proto.storage_id = best
            self.blocks[best] = _MemBlock(proto, new_x, new_y)
            return proto
        return None

    def alloc(self, proto: Token2D, storage_id: int) -> Token2D:
        """A new texture of ``proto``'s size, numbered ``storage_id``."""
        width, height, _ = proto.size_2d()
        proto.storage_id = storage_id
        self.blocks[storage_id] = _MemBlock(proto, width, height)
        return proto

    def check_for_release(self, tok: Token2D) -> None:
        """Put ``tok``'s texture on the free list when its count is 0."""
        if tok.storage_id < 0 or tok.ref_counter < 0:
            raise GraphError(f"internal error: texture token {tok.where} released in a bad state")
        if tok.ref_counter == 0:
            self.free_list.insert(tok.storage_id)
