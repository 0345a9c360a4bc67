"""Web, workers and broker on hosts of their own: the workers' host cut off the broker while
assessors judge and a run is imported; nothing acknowledged is lost and every score converges.

The hosts are network namespaces on one bridge (`ip netns`, veth pairs): the broker's host runs
Redis, the web host gunicorn as `make serve` runs it, the workers' host every Celery process of
the Procfile; this process is the assessors' machine and the database's host (PostgreSQL,
reached through a TCP relay on the bridge). The cut is a blackhole route to the broker on the
workers' host: the web host still reaches it and keeps enqueueing. `make test-several-hosts`
cuts for 30 s; the suite's variant for 10 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests
from django.db import connection
from django.db.models import F
from rest_framework.authtoken.models import Token

from annotations import services
from annotations.models import Collection, ImportJob, Judgement, Membership, Query, Run
from tests.conftest import require_component
from tests.factories import CollectionFactory, UserFactory
from tests.test_broker_outage import _procfile, _stop_group
from tests.test_scores import oracle, stored_ndcg
from tests.waiting import wait_until
from tests.workers import ROOT, database_url

pytestmark = pytest.mark.celery

CUT_SECONDS = float(os.environ.get("TEST_CUT_SECONDS", "10"))
HOSTS = ("broker", "workers", "web")


def _ip(*arguments: str, namespace: str = "") -> None:
    prefix = ["ip", "netns", "exec", namespace] if namespace else []
    subprocess.run([*prefix, "ip", *arguments], check=True, capture_output=True)


class Network:
    """A bridge with this machine on .1 and one namespace per host on .2, .3, .4."""

    def __init__(self) -> None:
        tag = f"{os.getpid() % 100_000}"
        self.bridge = f"nb{tag}"
        self.subnet = f"10.{200 + os.getpid() % 50}.{os.getpid() % 250}"
        self.names = {host: f"ndcg-{host}-{tag}" for host in HOSTS}
        self.addresses = {"db": f"{self.subnet}.1"} | {
            host: f"{self.subnet}.{index}" for index, host in enumerate(HOSTS, start=2)
        }

    def up(self) -> None:
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.addresses['db']}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for index, host in enumerate(HOSTS):
            namespace, outside, inside = self.names[host], f"{self.bridge}o{index}", "eth0"
            _ip("netns", "add", namespace)
            _ip("link", "add", outside, "type", "veth", "peer", "name", f"{self.bridge}i{index}")
            _ip("link", "set", f"{self.bridge}i{index}", "netns", namespace)
            _ip("link", "set", f"{self.bridge}i{index}", "name", inside, namespace=namespace)
            _ip("link", "set", outside, "master", self.bridge)
            _ip("link", "set", outside, "up")
            _ip("addr", "add", f"{self.addresses[host]}/24", "dev", inside, namespace=namespace)
            _ip("link", "set", inside, "up", namespace=namespace)
            _ip("link", "set", "lo", "up", namespace=namespace)

    def down(self) -> None:
        for namespace in self.names.values():
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)

    def cut(self, host: str, peer: str) -> None:
        _ip("route", "add", "blackhole", self.addresses[peer], namespace=self.names[host])

    def mend(self, host: str, peer: str) -> None:
        _ip("route", "del", "blackhole", self.addresses[peer], namespace=self.names[host])

    def start(
        self, host: str, command: list[str], env: dict[str, str], log: Path
    ) -> subprocess.Popen[bytes]:
        with open(log, "wb") as output:
            return subprocess.Popen(
                ["ip", "netns", "exec", self.names[host], *command],
                cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip


def _listening(address: str, port: int, seconds: float, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args} exited with {process.returncode}")
        with contextlib.suppress(OSError):
            socket.create_connection((address, port), timeout=0.5).close()
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {address}:{port} after {seconds} s")


@pytest.fixture
def hosts(transactional_db: None, tmp_path: Path, settings: Any) -> Iterator[dict[str, Any]]:
    """The three hosts up, each running its part of the platform on the test database."""
    if connection.vendor != "postgresql":
        require_component("several hosts share PostgreSQL (set DATABASE_URL)")
    if os.geteuid() != 0 or shutil.which("ip") is None:
        require_component("network namespaces need root and iproute2")
    for program in ("redis-server", "socat"):
        if shutil.which(program) is None:
            require_component(f"{program} is not installed")
    network = Network()
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        network.up()
        database = urlsplit(database_url())
        relay_port = 15432
        processes["relay"] = subprocess.Popen(
            ["socat", f"TCP-LISTEN:{relay_port},bind={network.addresses['db']},fork,reuseaddr",
             f"TCP:{database.hostname}:{database.port or 5432}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        broker = network.addresses["broker"]
        processes["redis"] = network.start(
            "broker",
            ["redis-server", "--bind", broker, "--port", "6379", "--protected-mode", "no",
             "--save", "", "--appendonly", "no"],
            dict(os.environ), tmp_path / "redis.log",
        )  # fmt: skip
        _listening(network.addresses["db"], relay_port, 10, processes["relay"])
        _listening(broker, 6379, 10, processes["redis"])
        netloc = f"{database.username}@{network.addresses['db']}:{relay_port}"
        environment = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "ndcg_platform.settings",
            "DATABASE_URL": urlunsplit(database._replace(netloc=netloc)),
            "CELERY_BROKER_URL": f"redis://{broker}:6379/0",
            # one uploads storage for every host (here a directory all of them mount)
            "NDCG_UPLOAD_DIR": str(settings.NDCG_UPLOAD_DIR),
            "TEST_SWEEP_SECONDS": "2",  # the workers' beat sweeps every 2 s
            "DJANGO_ALLOWED_HOSTS": network.addresses["web"],
            "NDCG_THROTTLE_USER": "1000000/minute",
            "HOST": network.addresses["web"],
            "PORT": "8000",
            "WEB_CONCURRENCY": "2",
            "BEAT_SCHEDULE": str(tmp_path / "beat-schedule"),
            "C_FORCE_ROOT": "1",
        }
        for name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
            environment.pop(name, None)
        # the project's settings with the tests' worker tuning (tests/worker_settings.py)
        workers_environment = {**environment, "DJANGO_SETTINGS_MODULE": "tests.worker_settings"}
        gunicorn = str(Path(sys.executable).parent / "gunicorn")
        processes["web"] = network.start(
            "web",
            [gunicorn, "ndcg_platform.wsgi:application", "--config",
             "ndcg_platform/gunicorn.conf.py"],
            environment, tmp_path / "web.log",
        )  # fmt: skip
        for name, command in _procfile().items():
            if name == "web":
                continue
            arguments = shlex.split(command)
            arguments[1:1] = ["--assume-old=.venv/.installed-serve"]
            processes[name] = network.start(
                "workers", arguments, workers_environment, tmp_path / f"{name}.log"
            )
        _listening(network.addresses["web"], 8000, 60, processes["web"])
        yield {"network": network, "processes": processes, "logs": tmp_path}
    finally:
        for process in processes.values():
            _stop_group(process)
        network.down()


@pytest.fixture
def campaign(transactional_db: None, write_file: Callable[..., Path]) -> Collection:
    """Eight queries of twelve documents, four runs over them, one import account's qrels."""
    rng = random.Random(11)
    docs = {f"q{q}": [f"d{q}-{d}" for d in range(12)] for q in range(8)}
    qrels = "".join(
        f"{qid} 0 {docno} {rng.randrange(4)}\n" for qid, ds in docs.items() for docno in ds[:4]
    )
    collection = CollectionFactory(slug="hosts", cutoffs=[5, 10])
    services.judgements_import(
        collection=collection, source=write_file("h.qrels", qrels), assessor=UserFactory()
    )
    for run in range(4):
        lines = [
            f"{qid} Q0 {docno} {rank} {100 - rank} run{run}\n"
            for qid, ds in docs.items()
            for rank, docno in enumerate(rng.sample(ds, len(ds)), start=1)
        ]
        services.run_import(collection=collection, source=write_file(f"run{run}", "".join(lines)))
    return collection


def test_the_workers_host_cut_off_the_broker_loses_nothing_and_every_score_converges(
    campaign: Collection, hosts: dict[str, Any]
) -> None:
    network: Network = hosts["network"]
    collection = campaign
    organiser = UserFactory()
    Membership.objects.create(collection=collection, user=organiser, role="organiser")
    token, _ = Token.objects.get_or_create(user=organiser)
    web = requests.Session()
    web.headers["Authorization"] = f"Token {token.key}"
    base = f"http://{network.addresses['web']}:8000/api/v1/collections/{collection.slug}"
    pairs = sorted(
        Judgement.objects.filter(query__collection=collection).values_list(
            "query__qid", "document__docno"
        )
    )
    rng = random.Random(5)
    posted: dict[tuple[str, str], int] = {}
    answered = []

    def judge_for(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            qid, docno = rng.choice(pairs)
            grade = rng.randrange(4)
            answer = web.post(
                f"{base}/judgements/", json={"qid": qid, "docno": docno, "grade": grade}, timeout=30
            )
            assert answer.status_code in (200, 201), answer.text
            posted[(qid, docno)] = grade
            answered.append(answer.status_code)
            time.sleep(0.05)

    stale = Query.objects.filter(collection=collection, judgements_version__gt=F("scored_version"))

    def converged() -> bool:
        return not stale.exists() and stored_ndcg(collection) == oracle(collection)

    def logs() -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-1500:]}"
            for path in sorted(hosts["logs"].glob("*.log"))
        )

    judge_for(2)
    wait_until(converged, f"the first scores were not stored\n{logs()}", 90, every=0.5)

    network.cut("workers", "broker")
    try:
        judge_for(CUT_SECONDS / 2)
        # A run uploaded during the cut: the web host stores the file and queues the job.
        run = "".join(
            f"q{q} Q0 d{q}-{d} {d + 1} {50 - d} cutrun\n" for q in range(8) for d in range(10)
        )
        answer = web.post(
            f"{base}/import-jobs/",
            data={"kind": "run"},
            files={"file": ("cutrun.txt", run.encode())},
            timeout=30,
        )
        assert answer.status_code == 202, answer.text
        job_url = answer.headers["Location"]
        judge_for(CUT_SECONDS / 2)
        # The workers' host did nothing the while: the last judgements are still pending.
        assert stale.exists()
    finally:
        network.mend("workers", "broker")
    judge_for(2)

    wait_until(converged, f"the scores did not converge after the cut\n{logs()}", 120, every=0.5)

    def imported() -> bool:
        state = web.get(job_url, timeout=30).json()["state"]
        assert state != ImportJob.FAILED, logs()
        return bool(state == ImportJob.DONE)

    wait_until(imported, f"the run uploaded during the cut was not imported\n{logs()}", 120)
    assert Run.objects.filter(collection=collection, name="cutrun").exists()
    wait_until(converged, f"the imported run was not scored\n{logs()}", 60, every=0.5)
    dead = {name: p.returncode for name, p in hosts["processes"].items() if p.poll() is not None}
    assert not dead, f"{dead} exited\n{logs()}"
    stored = dict(
        ((qid, docno), grade)
        for qid, docno, grade in Judgement.objects.filter(assessor=organiser).values_list(
            "query__qid", "document__docno", "grade"
        )
    )
    assert stored == posted and len(posted) > 20
    print(json.dumps({"cut_seconds": CUT_SECONDS, "judgements answered": len(answered)}))
