"""Django's Redis cache with one client object per connection pool.

Django builds a new `redis.Redis` for every cache call; with redis-py 8 the client's
constructor costs about as much CPU as the round trip itself (it builds its table of
response callbacks each time), paid on every judgement (the queued-recomputation mark) and
twice per recomputation on the workers. The client object is thread-safe over its pool,
and Django's caches are per thread, so keeping it changes nothing else.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class PooledRedisCacheClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        index = self._get_connection_pool_index(write)  # type: ignore[attr-defined]
        client = self._clients.get(index)
        if client is None:
            pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
            client = self._clients[index] = self._client(connection_pool=pool)  # type: ignore[attr-defined]
        return client


class PooledRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = PooledRedisCacheClient
