"""What a process keeps between computations per (collection, k): a bounded, least recently
used set of entries. An entry that is changed in place is taken out while in use (a
concurrent computation reads its own); one that is never changed is shared (``peek``)."""

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

    def peek(self, key: Key) -> T | None:
        """The entry of `key`, left held (None if none is held): for entries nobody changes
        in place, so that a computation on another thread of the process (the significance
        thread's) does not leave a request without it."""
        with self._lock:
            entry = self._held.get(key)
            if entry is not None:
                self._held.move_to_end(key)
            return entry

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
