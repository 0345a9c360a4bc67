"""The webhooks page in a real browser at a phone's width, with long URLs and errors."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotations.models import Collection, WebhookDelivery, WebhookSubscription
from tests.test_browser_accessibility import PHONE, page_problems

pytestmark = pytest.mark.browser


def test_the_webhooks_page_passes_axe_and_fits_a_phone_with_long_urls(  # type: ignore[no-untyped-def]
    trial: Collection, browser, live_server
) -> None:
    from tests.conftest import browser_page, log_in

    now = timezone.now()
    for number in range(12):
        subscription = WebhookSubscription.objects.create(
            collection=trial,
            url=f"https://hooks.example.org/{number}/" + "receiver-" * 15,
            events=["judgement.created", "scores.updated"] if number % 2 else [],
        )
        WebhookDelivery.objects.bulk_create(
            WebhookDelivery(
                subscription=subscription,
                event_type="scores.updated",
                body="{}",
                state=("pending", "delivered", "failed")[attempt % 3],
                attempts=attempt,
                last_status=503 if attempt % 3 != 1 else 204,
                last_error="URLError: " + "connection refused by the receiver " * 10,
                next_attempt=now + timedelta(seconds=attempt),
            )
            for attempt in range(25)
        )
    with browser_page(browser, live_server, viewport=PHONE) as page:
        log_in(page, "olga")
        problems = page_problems(page, "/collections/trial/webhooks/")
        assert page.locator("section.webhook").count() == 12
        assert page.locator("table.deliveries tbody tr").count() == 12 * 20  # the latest 20 each
    assert not problems, "\n".join(problems)
