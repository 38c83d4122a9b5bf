"""A read-only sequence of leaves that is not a list: the indexing rules written once.

The verifier and the exporter hand the entries' lines around as ``Sequence[bytes]`` views
that read them on demand (:class:`registre.attest.bundles.leaves.BundleLeaves` from the zip,
a prefix of those in step 6, the exporter's rows read from the database, and the leaf hashes
of those lines computed as they are read, :class:`registre.attest.bundles.leaves.LeafHashes`).
:class:`LeafView`
gives them ``__getitem__`` with the behaviour of a list's: a negative index counts from the
end, an index out of range raises IndexError, a slice is ``[start:stop:step]`` as a list's.
A subclass gives ``__len__`` and :meth:`LeafView._leaf`, and may give a contiguous slice of
its own (:meth:`LeafView._range`, default: a list of the leaves).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import overload

__all__ = ["LeafView"]


class LeafView(Sequence[bytes]):
    """``Sequence[bytes]`` from ``__len__`` and :meth:`_leaf` (module docstring)."""

    __slots__ = ()

    @abstractmethod
    def _leaf(self, index: int) -> bytes:
        """Leaf ``index``, ``0 <= index < len(self)``."""

    def _range(self, start: int, stop: int) -> Sequence[bytes]:
        """Leaves ``start .. stop-1`` (``0 <= start <= stop <= len``): a list unless the
        subclass has a view of its own."""
        return [self._leaf(index) for index in range(start, stop)]

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[bytes]: ...

    def __getitem__(self, index: int | slice) -> bytes | Sequence[bytes]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                return self._range(start, max(start, stop))
            return [self._leaf(i) for i in range(start, stop, step)]
        count = len(self)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError(index)
        return self._leaf(index)
