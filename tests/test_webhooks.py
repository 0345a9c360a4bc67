"""Webhooks: subscriptions, the outbox written with each change, signed deliveries to a real
HTTP receiver with retries, coalescing, SSRF refusals, the API by role and the page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotations import events, services
from annotations.models import (
    Collection,
    Document,
    Query,
    WebhookDelivery,
    WebhookSubscription,
)
from annotations.scores import scores_updated_emit
from annotations.selectors.webhooks import subscriptions_with_log
from annotations.services import webhooks
from annotations.services.versions import qrels_version_tag
from annotations.services.webhooks import (
    deliveries_send_due,
    retry_after_of,
    subscription_create,
    target_refusal,
)
from tests.factories import CollectionFactory, MembershipFactory, UserFactory
from tests.waiting import wait_until
from tests.webhook_receiver import Receiver, receiving

PUBLIC = "http://93.184.216.34/hook"  # a global address literal: no DNS needed


def _bodies(subscription: WebhookSubscription) -> list[dict[str, Any]]:
    return [
        json.loads(body)
        for body in subscription.deliveries.order_by("id").values_list("body", flat=True)
    ]


def _judge(collection: Collection, username: str, qid: str, docno: str, grade: int) -> None:
    from django.contrib.auth.models import User

    services.judgement_record(
        query=Query.objects.get(collection=collection, qid=qid),
        document=Document.objects.get(collection=collection, docno=docno),
        assessor=User.objects.get(username=username),
        grade=grade,
        source="api",
    )


# --- targets --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://93.184.216.34/x", "http:// or https://"),
        ("http:///x", "no host"),
        ("http://user:secret@93.184.216.34/x", "user name or password"),
        ("http://127.0.0.1:8000/hook", "loopback"),
        ("http://localhost/hook", "loopback"),
        ("http://10.1.2.3/hook", "private"),
        ("http://169.254.169.254/latest/meta-data", "private"),
        ("http://[::1]/hook", "private"),
        ("http://no-such-host.invalid/hook", "does not resolve"),
    ],
)
def test_targets_the_platform_will_not_reach_are_refused(url: str, says: str, settings) -> None:  # type: ignore[no-untyped-def]
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = False
    refusal = target_refusal(url)
    assert refusal is not None and says in refusal


def test_a_global_address_is_a_target_and_private_ones_only_when_allowed(settings) -> None:  # type: ignore[no-untyped-def]
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = False
    assert target_refusal(PUBLIC) is None
    assert target_refusal("http://127.0.0.1/hook") is not None
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = True
    assert target_refusal("http://127.0.0.1/hook") is None


def testretry_after_of_reads_seconds_and_dates_and_is_bounded() -> None:
    now = timezone.now()
    assert retry_after_of("7", now) == timedelta(seconds=7)
    assert retry_after_of("9999999", now) == timedelta(days=1)
    assert retry_after_of(None, now) is None and retry_after_of("soon", now) is None
    later = (now + timedelta(seconds=90)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert timedelta(seconds=88) <= retry_after_of(later, now) <= timedelta(seconds=91)  # type: ignore[operator]


# --- subscriptions and the outbox -----------------------------------------------------------


def test_subscribing_checks_the_url_and_the_event_names(trial: Collection, settings) -> None:  # type: ignore[no-untyped-def]
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(ValidationError) as unknown:
        subscription_create(collection=trial, url=PUBLIC, events=["run.deleted"], created_by=None)
    assert "run.deleted" in str(unknown.value)
    with pytest.raises(ValidationError) as private:
        subscription_create(collection=trial, url="http://127.0.0.1/h", created_by=None)
    assert "NDCG_WEBHOOK_ALLOW_PRIVATE" in str(private.value)
    assert not WebhookSubscription.objects.exists()
    subscription = subscription_create(collection=trial, url=PUBLIC, created_by=None)
    assert subscription.secret.startswith("whsec_") and subscription.events == []


def test_each_change_writes_one_delivery_per_subscription_that_wants_it(
    trial: Collection, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    everything = subscription_create(collection=trial, url=PUBLIC, created_by=None)
    tags = subscription_create(
        collection=trial, url=PUBLIC + "/tags", events=["version.tagged"], created_by=None
    )
    other = CollectionFactory(slug="elsewhere")
    elsewhere = subscription_create(collection=other, url=PUBLIC, created_by=None)
    with django_capture_on_commit_callbacks():
        _judge(trial, "alice", "q1", "d1", 2)
        _judge(trial, "alice", "q1", "d1", 3)
        _judge(trial, "alice", "q1", "d1", 3)  # no change, no event
        qrels_version_tag(collection=trial, name="round-1")
    kinds = [body["type"] for body in _bodies(everything)]
    assert kinds == ["judgement.created", "judgement.changed", "version.tagged"]
    created, changed, tagged = _bodies(everything)
    assert created["data"] == {
        "collection": "trial", "qid": "q1", "docno": "d1", "assessor": "alice",
        "old_grade": None, "grade": 2, "source": "api",
    }  # fmt: skip
    assert (changed["data"]["old_grade"], changed["data"]["grade"]) == (2, 3)
    assert tagged["data"]["version"] == "round-1"
    assert [body["type"] for body in _bodies(tags)] == ["version.tagged"]
    assert not elsewhere.deliveries.exists()


def test_a_change_rolled_back_leaves_no_delivery(trial: Collection) -> None:
    subscription = subscription_create(collection=trial, url=PUBLIC, created_by=None)
    with pytest.raises(RuntimeError), transaction.atomic():
        _judge(trial, "alice", "q1", "d2", 1)
        raise RuntimeError("the writer fails after the judgement")
    assert not subscription.deliveries.exists()


def test_a_collection_nobody_subscribed_to_costs_one_read(
    trial: Collection, django_assert_num_queries
) -> None:  # type: ignore[no-untyped-def]
    with django_assert_num_queries(1):
        events.emit(collection_id=trial.id, event_type="version.tagged", data=dict)


def test_a_burst_of_one_query_s_scores_is_one_pending_delivery(trial: Collection) -> None:
    subscription = subscription_create(collection=trial, url=PUBLIC, created_by=None)
    query = Query.objects.get(collection=trial, qid="q2")
    for _ in range(5):
        scores_updated_emit(query_id=query.id, collection_id=trial.id)
    [delivery] = subscription.deliveries.all()
    assert json.loads(delivery.body)["data"] == {"collection": "trial", "qid": "q2"}
    # Once a delivery is being sent, the next change gets a delivery of its own.
    WebhookDelivery.objects.filter(id=delivery.id).update(claimed=timezone.now())
    scores_updated_emit(query_id=query.id, collection_id=trial.id)
    assert subscription.deliveries.count() == 2


def test_a_burst_of_leaderboard_refreshes_is_one_delivery_per_cutoff_and_none_unchanged(
    trial: Collection, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    """Judgements that move the leaderboard within a few seconds are one delivery per cutoff,
    due after the burst with its last body; a refresh that moves nothing sends nothing."""
    from annotations.scores import snapshots

    for k in trial.sorted_cutoffs:
        snapshots.leaderboard_refresh(collection=trial, k=k)
    subscription = subscription_create(collection=trial, url=PUBLIC, created_by=None)
    for k in trial.sorted_cutoffs:
        snapshots.leaderboard_refresh(collection=trial, k=k)  # nothing changed since
    assert not subscription.deliveries.filter(event_type="leaderboard.changed").exists()
    for grade in (3, 1, 2):  # each recomputed and its leaderboards refreshed (eagerly)
        with django_capture_on_commit_callbacks(execute=True):
            _judge(trial, "alice", "q1", "d1", grade)
    changed = subscription.deliveries.filter(event_type="leaderboard.changed")
    bodies = sorted((json.loads(d.body)["data"]["k"], d) for d in changed)
    assert [k for k, _ in bodies] == trial.sorted_cutoffs  # one each, not one per refresh
    for k, delivery in bodies:
        assert delivery.next_attempt > timezone.now() + timedelta(seconds=10)  # after the burst
        board = snapshots.leaderboard_current(collection=trial, k=k)
        assert json.loads(delivery.body)["data"]["leader"] == board.rows[0].run.name


# --- sending to a real receiver -------------------------------------------------------------


@pytest.fixture
def quick_retries(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = True  # the receiver listens on 127.0.0.1
    monkeypatch.setattr(webhooks, "RETRY_SECONDS", (0.2, 0.2, 0.2))
    monkeypatch.setattr(webhooks, "TIMEOUT_SECONDS", 2.0)


def test_deliveries_are_signed_retried_with_the_same_id_and_given_up(
    trial: Collection, quick_retries: None
) -> None:
    failing_first = Receiver(answer=lambda count, wid: (500, {}) if count < 2 else (204, {}))
    with receiving(failing_first) as receiver:
        subscription = subscription_create(collection=trial, url=receiver.url, created_by=None)
        events.emit(collection_id=trial.id, event_type="version.tagged", data={"n": 1})
        [delivery] = subscription.deliveries.all()
        wait = deliveries_send_due()
        assert wait is not None and 0 < wait <= 0.2  # the retry is due in the schedule's time
        for _ in range(2):
            wait_until(lambda: (deliveries_send_due() or 0) == 0 and receiver.received, "a send")
            wait_until(
                lambda: WebhookDelivery.objects.get(id=delivery.id).next_attempt <= timezone.now(),
                "the retry due",
                seconds=5,
            )
        deliveries_send_due()
        delivery.refresh_from_db()
        assert delivery.state == "delivered" and delivery.attempts == 3
        assert [item.status for item in receiver.received] == [500, 500, 204]
        assert {item.webhook_id for item in receiver.received} == {delivery.webhook_id}
        assert [event["data"] for event in receiver.verified(subscription.secret)] == [{"n": 1}] * 3

    with receiving(Receiver(answer=lambda count, wid: (503, {}))) as down:
        WebhookSubscription.objects.filter(id=subscription.id).update(url=down.url)
        events.emit(collection_id=trial.id, event_type="version.tagged", data={"n": 2})
        latest = subscription.deliveries.order_by("-id").first()
        assert latest is not None

        def given_up() -> bool:
            deliveries_send_due()
            return WebhookDelivery.objects.get(id=latest.id).state == "failed"

        wait_until(given_up, "the delivery given up", seconds=10)
        assert len(down.received) == 4  # the first attempt and one per retry
        assert WebhookDelivery.objects.get(id=latest.id).last_status == 503


def testretry_after_of_from_the_receiver_postpones_the_next_attempt(
    trial: Collection, quick_retries: None
) -> None:
    busy = Receiver(answer=lambda count, wid: (429, {"Retry-After": "30"}))
    with receiving(busy) as receiver:
        subscription = subscription_create(collection=trial, url=receiver.url, created_by=None)
        events.emit(collection_id=trial.id, event_type="version.tagged", data={})
        before = timezone.now()
        wait = deliveries_send_due()
        assert wait is not None and 29 <= wait <= 30
        delivery = subscription.deliveries.get()
        assert delivery.next_attempt >= before + timedelta(seconds=29)
        assert (delivery.attempts, delivery.last_status, delivery.state) == (1, 429, "pending")


def test_every_change_is_delivered_once_signed_and_retried_after_a_failed_attempt(
    transactional_db: None, trial: Collection, quick_retries: None
) -> None:
    """Each write queues the sender after its commit (here run eagerly); the retry of the
    attempt answered 502 is the worker's next run or the sweep's (`deliveries_send_due`)."""
    flaky = Receiver(answer=lambda count, wid: (502, {}) if count == 0 else (200, {}))
    with receiving(flaky) as receiver:
        subscription = subscription_create(collection=trial, url=receiver.url, created_by=None)
        client = APIClient()
        token, _ = Token.objects.get_or_create(user=UserFactory(username="api-olga"))
        MembershipFactory(collection=trial, user=token.user, role="organiser")
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        for docno, grade in [("d1", 3), ("d2", 0), ("d1", 1)]:
            response = client.post(
                "/api/v1/collections/trial/judgements/",
                {"qid": "q1", "docno": docno, "grade": grade},
                format="json",
            )
            assert response.status_code in (200, 201), response.content
        wait_until(
            lambda: (
                (deliveries_send_due() or True)
                and not WebhookDelivery.objects.exclude(state="delivered").exists()
                and subscription.deliveries.count() >= 4
            ),
            "every delivery delivered",
            seconds=20,
        )
        receiver.verified(subscription.secret)  # every request signed (raises if not)
    kinds = [item.event["type"] for item in receiver.delivered()]
    assert kinds.count("judgement.created") == 2 and kinds.count("judgement.changed") == 1
    assert "scores.updated" in kinds
    # At least once: the one answered 502 came again with the same id, and nothing was
    # delivered twice.
    delivered = [item.webhook_id for item in receiver.delivered()]
    assert len(delivered) == len(set(delivered)) == subscription.deliveries.count()
    assert receiver.received[0].webhook_id in delivered


# --- the API, by role -----------------------------------------------------------------------


@pytest.fixture
def api_users(trial: Collection) -> Iterator[dict[str, APIClient]]:
    clients: dict[str, APIClient] = {"anonymous": APIClient()}
    for username in ("olga", "alice", "eve"):
        from django.contrib.auth.models import User

        token, _ = Token.objects.get_or_create(user=User.objects.get(username=username))
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        clients[username] = client
    yield clients


def test_organisers_manage_webhooks_through_the_api_and_nobody_else(
    trial: Collection, api_users: dict[str, APIClient], django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    base = "/api/v1/collections/trial/webhooks/"
    body = {"url": PUBLIC, "events": ["judgement.created", "version.tagged"]}
    assert api_users["anonymous"].post(base, body, format="json").status_code == 401
    assert api_users["alice"].post(base, body, format="json").status_code == 403
    assert api_users["eve"].get(base).status_code in (403, 404)
    refused = api_users["olga"].post(base, {"url": "http://127.0.0.1/x"}, format="json")
    assert refused.status_code == 400 and "url" in refused.json()["error"]["fields"]
    unknown = api_users["olga"].post(base, {"url": PUBLIC, "events": ["nope"]}, format="json")
    assert unknown.status_code == 400
    made = api_users["olga"].post(base, body, format="json")
    assert made.status_code == 201, made.content
    hook = made.json()
    assert made["Location"].endswith(f"{base}{hook['id']}/")
    assert hook["secret"].startswith("whsec_") and hook["events"] == body["events"]
    listed = api_users["olga"].get(base).json()
    assert [item["id"] for item in listed["results"]] == [hook["id"]]
    assert api_users["alice"].get(f"{base}{hook['id']}/").status_code == 403
    with django_capture_on_commit_callbacks():
        tested = api_users["olga"].post(f"{base}{hook['id']}/test/")
    assert tested.status_code == 202
    log = api_users["olga"].get(f"{base}{hook['id']}/deliveries/").json()["results"]
    assert [entry["event_type"] for entry in log] == ["webhook.test"]
    assert log[0]["webhook_id"].startswith("msg_") and log[0]["state"] == "pending"
    assert api_users["olga"].get(f"{base}999999/").status_code == 404
    assert api_users["olga"].delete(f"{base}{hook['id']}/").status_code == 204
    assert not WebhookSubscription.objects.exists() and not WebhookDelivery.objects.exists()


# --- the page -------------------------------------------------------------------------------


def test_the_webhooks_page_adds_tests_and_deletes_for_organisers_only(
    trial: Collection, settings
) -> None:  # type: ignore[no-untyped-def]
    settings.NDCG_WEBHOOK_ALLOW_PRIVATE = False
    page = reverse("collection-webhooks", args=["trial"])
    assessor = Client()
    assessor.force_login(trial.memberships.get(user__username="alice").user)
    assert assessor.get(page).status_code in (403, 404)
    organiser = Client()
    organiser.force_login(trial.memberships.get(user__username="olga").user)
    refused = organiser.post(page, {"url": "http://10.0.0.7/hook"})
    assert refused.status_code == 200 and b"private" in refused.content
    assert not WebhookSubscription.objects.exists()
    added = organiser.post(page, {"url": PUBLIC, "events": ["version.tagged"]}, follow=True)
    assert added.status_code == 200
    subscription = WebhookSubscription.objects.get()
    assert subscription.events == ["version.tagged"]
    assert subscription.secret.encode() in added.content
    organiser.post(reverse("collection-webhook-test", args=["trial", subscription.id]))
    shown = organiser.get(page)
    assert b"webhook.test" in shown.content and subscription.deliveries.count() == 1
    organiser.post(reverse("collection-webhook-delete", args=["trial", subscription.id]))
    assert not WebhookSubscription.objects.exists()


def test_the_page_shows_each_webhook_s_latest_deliveries_in_two_queries(
    trial: Collection, django_assert_num_queries
) -> None:  # type: ignore[no-untyped-def]
    hooks = [
        subscription_create(collection=trial, url=f"{PUBLIC}{n}", created_by=None) for n in range(3)
    ]
    due = timezone.now()
    for index, hook in enumerate(hooks):
        WebhookDelivery.objects.bulk_create(
            WebhookDelivery(subscription=hook, event_type=f"e{i}", body="{}", next_attempt=due)
            for i in range(5 + 10 * index)  # 5, 15 and 25 deliveries
        )
    with django_assert_num_queries(2):
        shown = subscriptions_with_log(collection=trial, rows=12)
    assert [item.id for item in shown] == [hook.id for hook in hooks]
    logs = [[delivery.event_type for delivery in item.log] for item in shown]
    assert [len(log) for log in logs] == [5, 12, 12]
    assert logs[2] == [f"e{i}" for i in range(24, 12, -1)]  # the newest first


# --- every write path sends its event ---------------------------------------------------------


def test_every_import_path_and_adjudications_send_their_events(
    trial: Collection,
    api_users: dict[str, APIClient],
    write_file,
    django_capture_on_commit_callbacks,
) -> None:  # type: ignore[no-untyped-def]
    """Imports in the request, by command and as a standard collection part send
    `import.finished` (job null) as jobs do; an adjudication sends `judgement.changed`. A
    subscriber mirroring the judgements hears of every change."""
    from io import StringIO

    from django.contrib.auth.models import User
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command

    subscription = subscription_create(collection=trial, url=PUBLIC, created_by=None)
    olga = api_users["olga"]
    with django_capture_on_commit_callbacks():
        answer = olga.post(
            "/api/v1/collections/trial/imports/qrels/",
            {"file": SimpleUploadedFile("round2.qrels", b"q1 0 d3 2\nq2 0 d4 1\n")},
            format="multipart",
        )
        assert answer.status_code == 200, answer.content
        qrels = write_file("cmd.qrels", "q1 0 d2 1\n")
        call_command("import_qrels", "trial", str(qrels), "-q", stdout=StringIO())
        run = write_file("fresh.run", "q1 Q0 d1 1 2.0 fresh\nq2 Q0 d4 1 1.0 fresh\n")
        call_command("import_run", "trial", str(run), "-q", stdout=StringIO())
        answer = olga.post(
            "/api/v1/collections/trial/runs/",
            {"file": SimpleUploadedFile("api.run", b"q1 Q0 d2 1 2.0 api\n")},
            format="multipart",
        )
        assert answer.status_code == 201, answer.content
        services.adjudication_record(
            query=Query.objects.get(collection=trial, qid="q1"),
            document=Document.objects.get(collection=trial, docno="d3"),
            organiser=User.objects.get(username="olga"),
            grade=0,
        )
    finished = [b["data"] for b in _bodies(subscription) if b["type"] == "import.finished"]
    assert [(d["kind"], d["file"], d["job"]) for d in finished] == [
        ("qrels", "round2.qrels", None),
        ("qrels", str(qrels), None),
        ("run", str(run), None),
        ("run", "api.run", None),
    ]
    assert "2 created" in finished[0]["summary"] and "fresh" in finished[2]["summary"]
    [adjudicated] = [
        b["data"] for b in _bodies(subscription) if b["data"].get("source") == "adjudication"
    ]
    assert adjudicated == {
        "collection": "trial", "qid": "q1", "docno": "d3", "assessor": "olga",
        "old_grade": 2, "grade": 0, "source": "adjudication",
    }  # fmt: skip


def test_a_refused_import_sends_no_event(
    trial: Collection, api_users: dict[str, APIClient]
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    subscription = subscription_create(collection=trial, url=PUBLIC, created_by=None)
    answer = api_users["olga"].post(
        "/api/v1/collections/trial/imports/qrels/",
        {"file": SimpleUploadedFile("bad.qrels", b"q1 0 d3 2\nq1 0 d4 nine\n")},
        format="multipart",
    )
    assert answer.status_code == 400
    assert not subscription.deliveries.exists()
