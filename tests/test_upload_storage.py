"""Uploads through Django's storage API: an import job whose upload lives in an S3 bucket
(moto's S3 server on 127.0.0.1, spoken to by django-storages' S3 backend), run by this
process and by a real Celery worker whose own upload directory holds nothing: web servers
and workers on different hosts share import jobs through the storage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import caches
from django.core.files.storage import storages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotations.models import Collection, ImportJob, Judgement
from annotations.services import upload_store
from annotations.services.job_recovery import import_job_dismiss
from annotations.services.jobs import import_job_create, import_job_run
from tests.conftest import celery_broker, require_component
from tests.factories import MembershipFactory, UserFactory
from tests.workers import BROKER, redis_reachable, worker_start

S3 = "storages.backends.s3.S3Storage"
QRELS = "".join(f"q{i % 7} 0 doc{i} {i % 4}\n" for i in range(300)).encode()


@pytest.fixture
def bucket(settings: Any, tmp_path: Path) -> Iterator[dict[str, str]]:
    """An S3 bucket on moto's server, the uploads storage of this process; the options."""
    try:
        import boto3  # noqa: F401  (the S3 backend needs it)
        from moto.server import ThreadedMotoServer
    except ImportError:
        require_component("boto3 and moto[server] are not installed (make install)")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    options = {
        "bucket_name": f"ndcg-uploads-{uuid.uuid4().hex[:12]}",
        "endpoint_url": f"http://127.0.0.1:{port}",
        "access_key": "test-key",
        "secret_key": "test-secret",
        "region_name": "us-east-1",
    }
    _s3(options).create_bucket(Bucket=options["bucket_name"])
    settings.STORAGES = {**settings.STORAGES, "uploads": {"BACKEND": S3, "OPTIONS": options}}
    settings.NDCG_UPLOAD_DIR = tmp_path / "web-uploads"  # not the uploads' storage here
    try:
        yield options
    finally:
        server.stop()


def _s3(options: dict[str, str]) -> Any:
    """A boto3 client of the storage's endpoint, with its options' credentials."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=options["endpoint_url"],
        aws_access_key_id=options["access_key"],
        aws_secret_access_key=options["secret_key"],
        region_name=options["region_name"],
    )


def _objects(options: dict[str, str]) -> list[str]:
    listed = _s3(options).list_objects_v2(Bucket=options["bucket_name"])
    return [item["Key"] for item in listed.get("Contents", [])]


def test_a_job_stores_its_upload_in_the_bucket_and_deletes_it_once_imported(
    collection: Collection, bucket: dict[str, str], settings: Any
) -> None:
    assert settings.NDCG_UPLOAD_DIR and storages["uploads"].__class__.__name__ == "S3Storage"
    job = import_job_create(
        collection=collection,
        kind=ImportJob.QRELS,
        upload=SimpleUploadedFile("s3.qrels", QRELS),
        created_by=None,
    )
    assert job.upload_path == f"{job.token}.upload"
    assert _objects(bucket) == [job.upload_path]  # in the bucket, not on this machine
    assert not Path(settings.NDCG_UPLOAD_DIR).exists()
    assert upload_store.upload_exists(job.upload_path)
    with upload_store.upload_open(job.upload_path) as stored:
        assert stored.read() == QRELS

    assert import_job_run(job_id=job.id) == ImportJob.DONE
    job.refresh_from_db()
    assert (job.lines_done, job.lines_total, job.upload_path) == (300, 300, "")
    assert Judgement.objects.filter(query__collection=collection).count() == 300
    assert _objects(bucket) == []  # deleted once the import committed


def test_a_failed_job_keeps_its_upload_in_the_bucket_until_dismissed(
    collection: Collection, bucket: dict[str, str]
) -> None:
    job = import_job_create(
        collection=collection,
        kind=ImportJob.QRELS,
        upload=SimpleUploadedFile("kept.qrels", QRELS),
        created_by=None,
    )
    ImportJob.objects.filter(id=job.id).update(state=ImportJob.FAILED, error="worker stopped")
    job.refresh_from_db()
    assert job.retryable and _objects(bucket) == [job.upload_path]
    import_job_dismiss(job=job)
    assert _objects(bucket) == []


@pytest.mark.celery
def test_a_worker_on_another_upload_directory_imports_a_job_from_the_bucket(
    collection: Collection, bucket: dict[str, str], settings: Any, tmp_path: Path
) -> None:
    if not redis_reachable():
        require_component(f"Redis is not reachable at {BROKER}")
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    olga = UserFactory(username="olga")
    MembershipFactory(collection=collection, user=olga, role="organiser")
    page = Client()
    page.force_login(olga)
    elsewhere = tmp_path / "worker-uploads"  # the worker's own directory: never written
    queue = f"ndcg-test-s3-imports-{os.getpid()}"
    worker = worker_start(
        queue,
        {
            "NDCG_UPLOAD_DIR": str(elsewhere),
            "NDCG_UPLOAD_STORAGE": S3,
            "NDCG_UPLOAD_STORAGE_OPTIONS": json.dumps(bucket),
        },
        without=["DJANGO_CACHE_URL"],
    )
    settings.CELERY_BROKER_URL = BROKER
    try:
        with celery_broker(BROKER, task_default_queue=queue):
            response = page.post(
                reverse("collection-import-upload", args=["demo", "qrels"]),
                {"qrels-file": SimpleUploadedFile("far.qrels", QRELS)},
            )
            assert response.status_code == 302
            job = ImportJob.objects.get()
            assert _objects(bucket) == [job.upload_path]  # stored by this (web) process
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                job.refresh_from_db()
                if job.state in (ImportJob.DONE, ImportJob.FAILED):
                    break
                time.sleep(0.2)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        caches["coordination"].close()
    assert (job.state, job.error) == (ImportJob.DONE, "")
    assert job.summary == "judgements as trec: 300 created, 0 updated, 0 unchanged"
    assert Judgement.objects.filter(query__collection=collection).count() == 300
    assert _objects(bucket) == [] and not elsewhere.exists()


def test_a_storage_options_setting_that_is_not_a_json_object_stops_the_process() -> None:
    environment = {
        **os.environ,
        "NDCG_UPLOAD_STORAGE": S3,
        "NDCG_UPLOAD_STORAGE_OPTIONS": '["bucket"]',
        "DJANGO_SETTINGS_MODULE": "ndcg_platform.settings",
    }
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert result.returncode != 0
    assert "NDCG_UPLOAD_STORAGE_OPTIONS must be a JSON object" in result.stderr
