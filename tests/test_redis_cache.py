"""The coordination cache's Redis backend: one client object per pool, the same answers."""

import os
from collections.abc import Iterator

import pytest

from ndcg_platform.redis_cache import PooledRedisCache
from tests.conftest import require_component
from tests.workers import BROKER, redis_reachable


@pytest.fixture
def cache() -> Iterator[PooledRedisCache]:
    if not redis_reachable():
        require_component(f"Redis is not reachable at {BROKER}")
    base, _, db = BROKER.rpartition("/")
    number = int(db) if db.isdigit() else 15
    backend = PooledRedisCache(
        f"{base}/{(number - 1) % 16}", {"KEY_PREFIX": f"ndcg-cache-test-{os.getpid()}"}
    )
    yield backend
    backend.delete_many(["mark", "other"])


def test_one_client_object_serves_every_call(cache: PooledRedisCache) -> None:
    client = cache._cache.get_client(write=True)
    assert cache._cache.get_client(write=True) is client
    assert cache._cache.get_client() is client  # one server: reads use the same pool


def test_marks_behave_as_with_djangos_backend(cache: PooledRedisCache) -> None:
    assert cache.add("mark", 1, timeout=30)
    assert not cache.add("mark", 2, timeout=30)
    assert cache.get("mark") == 1
    cache.set("other", {"a": [1, 2]}, timeout=30)
    assert cache.get("other") == {"a": [1, 2]}
    assert cache.delete("mark")
    assert cache.get("mark") is None
    assert cache.add("mark", 3, timeout=30)
