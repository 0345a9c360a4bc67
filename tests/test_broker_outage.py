"""A broker outage: writes that committed answer 2xx at their normal speed, their scores stay
pending, the workers outlive the broker, and the sweep heals the scores once it is back."""

import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from django.db.models import F
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import scores, services, tasks
from annotations.models import Collection, Judgement, Membership, Query
from tests.conftest import celery_broker, require_component
from tests.factories import CollectionFactory, UserFactory
from tests.test_scores import oracle, stored_ndcg
from tests.waiting import wait_until
from tests.workers import ROOT, database_url

QRELS = "q1 0 d1 3\nq1 0 d2 1\nq2 0 d3 2\n"
RUN = "q1 Q0 d2 1 9 sys\nq1 Q0 d1 2 8 sys\nq2 Q0 d3 1 3 sys\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class OwnRedis:
    """A redis-server of the test's own on a free port (never the shared one), which the test
    stops and starts again; nothing is kept across a stop, as after a crash."""

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.server: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.server = subprocess.Popen(
            [self.executable, "--port", str(self.port), *options], stdout=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)

    def stop(self) -> None:
        if self.server is not None:
            self.server.kill()
            self.server.wait()
            self.server = None


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    executable = shutil.which("redis-server")
    if executable is None:
        require_component("redis-server is not installed")
    redis = OwnRedis(str(executable))
    redis.start()
    yield redis
    redis.stop()


@pytest.fixture
def collection(transactional_db: None, write_file: Callable[..., Path]) -> Collection:
    collection = CollectionFactory(slug="outage", cutoffs=[2])
    services.judgements_import(
        collection=collection, source=write_file("o.qrels", QRELS), assessor=UserFactory()
    )
    services.run_import(collection=collection, source=write_file("o.run", RUN))
    return collection


def test_a_judgement_answers_201_at_once_with_the_broker_down_and_the_sweep_heals_it(
    collection: Collection, own_redis: OwnRedis, settings: Any
) -> None:
    url = own_redis.url
    assessor = UserFactory()
    Membership.objects.create(collection=collection, user=assessor, role="assessor")
    token, _ = Token.objects.get_or_create(user=assessor)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    settings.CELERY_BROKER_URL = url
    with celery_broker(url):
        own_redis.stop()
        started = time.monotonic()
        response = client.post(
            "/api/v1/collections/outage/judgements/",
            {"qid": "q1", "docno": "d2", "grade": 0},
            format="json",
        )
        elapsed = time.monotonic() - started
    assert response.status_code == 201, response.content
    assert response.json()["pending"] is True  # the API says the scores are not stored yet
    # Before: about 20 s of connection retries, then a 500 for a committed write.
    assert elapsed < 5.0, elapsed
    assert Judgement.objects.filter(assessor=assessor, grade=0).exists()
    query = Query.objects.get(collection=collection, qid="q1")
    assert query.scores_pending
    # the broker is back (here: the sweep runs in this process) and heals what was left
    assert scores.scores_sweep_stale(collection=collection) == 1
    query.refresh_from_db()
    assert not query.scores_pending


# Ten stops of the broker under load, each 5-15 s here and in CI; `make test-broker-outages`
# runs the full range (TEST_OUTAGE_SECONDS=5-60). One outage lasts the range's top
# (past Celery's longest wait between reconnection attempts at 5-60 s); the stops sum to at
# most OUTAGE_BUDGET_SECONDS.
OUTAGES = 10
OUTAGE_BUDGET_SECONDS = 240.0
JUDGEMENTS_URL = "/api/v1/collections/outage/judgements/"
# A message per judgement for the other workers' queues, beside the judgements' recomputations
# and leaderboard refreshes: cheap tasks of their own queue, so each worker has work in hand
# when the broker goes.
SIDE_TASKS = [
    (tasks.idempotency_purge, ()),
    (tasks.import_job_run, (0,)),  # no such job: answered "missing"
    (tasks.webhooks_sweep, ()),
]


def _outage_seconds(rng: random.Random) -> list[float]:
    low, _, high = os.environ.get("TEST_OUTAGE_SECONDS", "5-15").partition("-")
    shortest, longest = float(low), float(high)
    if longest + (OUTAGES - 1) * shortest > OUTAGE_BUDGET_SECONDS:
        raise ValueError(f"TEST_OUTAGE_SECONDS={low}-{high} cannot fit {OUTAGE_BUDGET_SECONDS} s")
    while True:
        seconds = [longest] + [rng.uniform(shortest, longest) for _ in range(OUTAGES - 1)]
        if sum(seconds) <= OUTAGE_BUDGET_SECONDS:
            rng.shuffle(seconds)
            return seconds


def _procfile() -> dict[str, str]:
    """The production processes by name, as the Procfile runs them."""
    entries = (line.partition(":") for line in (ROOT / "Procfile").read_text().splitlines())
    return {name.strip(): command.strip() for name, _, command in entries if command.strip()}


def test_the_procfile_runs_the_web_server_and_every_celery_process_of_the_makefile() -> None:
    """What production supervises (the Procfile; deploy/systemd/ runs the same make targets)
    is every process the Makefile starts."""
    celery_targets = set()
    target = ""
    for line in (ROOT / "Makefile").read_text().splitlines():
        if re.match(r"[\w-]+:", line):
            target = line.partition(":")[0]
        elif line.startswith("\t") and re.search(r"celery -A ndcg_platform (worker|beat)", line):
            celery_targets.add(target)
    assert {
        "worker",
        "worker-derived",
        "worker-imports",
        "worker-outbound",
        "beat",
    } <= celery_targets
    assert sorted(_procfile().values()) == sorted(f"make {t}" for t in {"serve", *celery_targets})


@pytest.fixture
def pooled_collection(transactional_db: None, write_file: Callable[..., Path]) -> Collection:
    """Eight queries of twelve documents, four runs over them, one import account's qrels."""
    rng = random.Random(7)
    docs = {f"q{q}": [f"d{q}-{d}" for d in range(12)] for q in range(8)}
    qrels = "".join(
        f"{qid} 0 {docno} {rng.randrange(4)}\n" for qid, ds in docs.items() for docno in ds[:4]
    )
    collection = CollectionFactory(slug="outage", cutoffs=[5, 10])
    services.judgements_import(
        collection=collection, source=write_file("o.qrels", qrels), assessor=UserFactory()
    )
    for run in range(4):
        lines = []
        for qid, ds in docs.items():
            for rank, docno in enumerate(rng.sample(ds, len(ds)), start=1):
                lines.append(f"{qid} Q0 {docno} {rank} {100 - rank} run{run}\n")
        services.run_import(collection=collection, source=write_file(f"run{run}", "".join(lines)))
    return collection


class _Load:
    """A stream of judgements through the API (the last grade posted per pair kept) and of
    the other queues' tasks, whether the broker is up or not."""

    def __init__(self, collection: Collection, rng: random.Random) -> None:
        assessor = UserFactory()
        Membership.objects.create(collection=collection, user=assessor, role="assessor")
        token, _ = Token.objects.get_or_create(user=assessor)
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        self.assessor = assessor
        self.rng = rng
        self.pairs = sorted(
            Judgement.objects.filter(query__collection=collection).values_list(
                "query__qid", "document__docno"
            )
        )
        self.posted: dict[tuple[str, str], int] = {}
        self.answered = 0
        self.side = 0

    def judge_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            qid, docno = self.rng.choice(self.pairs)
            grade = self.rng.randrange(4)
            response = self.client.post(
                JUDGEMENTS_URL, {"qid": qid, "docno": docno, "grade": grade}, format="json"
            )
            assert response.status_code in (200, 201), response.content
            self.posted[(qid, docno)] = grade
            self.answered += 1
            self.side_task()

    def side_task(self) -> None:
        task, args = SIDE_TASKS[self.side % len(SIDE_TASKS)]
        self.side += 1
        with suppress(Exception):  # the broker is down: this one is not sent
            task.apply_async(args, retry=False)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """Stop a Procfile process with its children (make does not pass signals on)."""
    for sent, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sent)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture
def procfile_workers(
    own_redis: OwnRedis, tmp_path: Path, settings: Any
) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """Every process of the Procfile but the web server (this test process is the web side),
    started as production starts them, on the test's own Redis and database."""
    environment = {
        **os.environ,
        "CELERY_BROKER_URL": own_redis.url,
        "DATABASE_URL": database_url(),
        "NDCG_UPLOAD_DIR": str(settings.NDCG_UPLOAD_DIR),
        # the project's settings (not the tests': their tasks run eagerly), the sweep that
        # heals what an outage left pending every 2 s (tests/worker_settings.py)
        "DJANGO_SETTINGS_MODULE": "tests.worker_settings",
        "TEST_SWEEP_SECONDS": "2",
        "BEAT_SCHEDULE": str(tmp_path / "beat-schedule"),
        "C_FORCE_ROOT": "1",
    }
    for name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):  # under `make test`: not the outer make's
        environment.pop(name, None)
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name, command in _procfile().items():
            if name == "web":
                continue
            arguments = shlex.split(command)
            if arguments[0] == "make":  # the install stamp taken as made: a test installs nothing
                arguments[1:1] = ["--assume-old=.venv/.installed-serve"]
            with open(tmp_path / f"{name}.log", "wb") as log:
                processes[name] = subprocess.Popen(
                    arguments,
                    cwd=ROOT,
                    env=environment,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        yield processes
    finally:
        for process in processes.values():
            _stop_group(process)


def _queues_consumed(url: str, queues: list[str]) -> Callable[[], bool]:
    import redis

    client = redis.Redis.from_url(url, socket_timeout=2)

    def consumed() -> bool:
        return all(client.llen(queue) == 0 for queue in queues)

    return consumed


@pytest.mark.celery
def test_every_worker_outlives_ten_broker_outages_under_load_and_every_score_converges(
    pooled_collection: Collection,
    own_redis: OwnRedis,
    procfile_workers: dict[str, subprocess.Popen[bytes]],
    settings: Any,
    tmp_path: Path,
) -> None:
    collection = pooled_collection
    seed = int(os.environ.get("TEST_OUTAGE_SEED") or random.randrange(10**6))
    rng = random.Random(seed)
    outages = _outage_seconds(rng)
    # The web side as in production: the broker's Redis also holds the coordination marks.
    settings.CELERY_BROKER_URL = own_redis.url
    settings.CACHES = {
        **settings.CACHES,
        "coordination": {
            "BACKEND": "ndcg_platform.redis_cache.PooledRedisCache",
            "LOCATION": own_redis.url,
            "KEY_PREFIX": "ndcg",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        },
    }
    settings.NDCG_COORDINATION_SHARED = True
    queues = ["celery", *{route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}]
    consumed = _queues_consumed(own_redis.url, queues)
    stale = Query.objects.filter(collection=collection, judgements_version__gt=F("scored_version"))

    def converged() -> bool:
        return not stale.exists() and stored_ndcg(collection) == oracle(collection)

    def said(names: list[str]) -> str:
        logs = {name: (tmp_path / f"{name}.log").read_text(errors="replace") for name in names}
        return "\n".join(
            f"{name}: {line}"
            for name, text in logs.items()
            for line in text.splitlines()
            if "Unrecoverable" in line or "CRITICAL" in line or "Error" in line
        )[-4000:]

    with celery_broker(own_redis.url, task_routes=settings.CELERY_TASK_ROUTES):
        load = _Load(collection, rng)
        load.judge_for(1)  # every worker up and reading its queue before the first outage
        wait_until(consumed, "the workers did not start", 90, every=0.5)
        wait_until(converged, "the first scores were not stored", 60, every=0.5)
        started = time.monotonic()
        for seconds in outages:
            load.judge_for(rng.uniform(2, 5))
            own_redis.stop()
            load.judge_for(seconds)
            own_redis.start()
        back = time.monotonic()
        load.judge_for(2)
        context = f"seed {seed}, outages {[round(s, 1) for s in outages]} s"
        # Every worker and beat is the one started before the outages.
        dead = {name: p.returncode for name, p in procfile_workers.items() if p.poll() is not None}
        assert not dead, f"{dead} exited ({context}):\n{said(list(dead))}"
        # Each queue is read again, and the sweep heals what the outages left pending.
        for task, args in SIDE_TASKS:
            task.apply_async(args)
        wait_until(consumed, f"a worker stopped reading its queue ({context})", 90, every=0.5)
        wait_until(converged, f"the scores did not converge ({context})", 90, every=0.5)
        healed = time.monotonic()
    dead = {name: p.returncode for name, p in procfile_workers.items() if p.poll() is not None}
    assert not dead, f"{dead} exited ({context}):\n{said(list(dead))}"
    # No acknowledged judgement was lost: each pair holds the last grade the API took.
    stored = dict(
        ((qid, docno), grade)
        for qid, docno, grade in Judgement.objects.filter(assessor=load.assessor).values_list(
            "query__qid", "document__docno", "grade"
        )
    )
    assert stored == load.posted
    assert len(load.posted) > 20
    print(
        f"{len(outages)} outages ({context}): {sum(outages):.0f} s of {healed - started:.0f} s;"
        f" {load.answered} judgements answered; every worker alive; converged"
        f" {healed - back:.0f} s after the broker's last return"
    )
