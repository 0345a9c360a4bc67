"""What a process keeps between computations per (collection, k): a bounded, least recently
used set of entries, each taken out while in use (a concurrent computation reads its own)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
Key = tuple[int, int]  # (collection id, k)


class ProcessHeld(Generic[T]):
    """At most `entries()` entries and `nbytes()` bytes of them (as `size` measures an
    entry), read at each keep (module settings a test may change); past either bound the
    least recent go, and an entry larger than the whole budget is not held."""

    def __init__(
        self, *, entries: Callable[[], int], nbytes: Callable[[], int], size: Callable[[T], int]
    ) -> None:
        self._entries = entries
        self._nbytes = nbytes
        self._size = size
        self._held: OrderedDict[Key, T] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: Key) -> T | None:
        """The entry of `key`, taken out (None if none is held)."""
        with self._lock:
            return self._held.pop(key, None)

    def keep(self, key: Key, entry: T) -> None:
        """Hold `entry` as the most recent."""
        budget = self._nbytes()
        if self._size(entry) > budget:
            return
        with self._lock:
            self._held.pop(key, None)
            self._held[key] = entry
            while len(self._held) > self._entries() or (
                sum(map(self._size, self._held.values())) > budget
            ):
                self._held.popitem(last=False)

    def forget(self, *, collection_id: int | None = None) -> None:
        """Drop the entries of one collection, or all."""
        with self._lock:
            for key in [key for key in self._held if collection_id in (None, key[0])]:
                del self._held[key]

    def keys(self) -> list[Key]:
        """The keys held, least recent first."""
        with self._lock:
            return list(self._held)
