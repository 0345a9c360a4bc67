"""Webhooks (organisers): subscribe URLs to the collection's events, the delivery log, test."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotations.forms.webhooks import WebhookForm
from annotations.models import Collection, WebhookSubscription
from annotations.selectors.webhooks import subscriptions_with_log
from annotations.services.webhooks import (
    subscription_create,
    subscription_delete,
    subscription_test,
)
from annotations.views._collection import acting_user, organised_collection
from annotations.views._forms import refusal_to_form

LOG_ROWS = 20


def _subscription(collection: Collection, webhook_id: int) -> WebhookSubscription:
    found = WebhookSubscription.objects.filter(collection=collection, id=webhook_id).first()
    if found is None:
        raise Http404("No such webhook")
    return found


@login_required
def webhooks(request: HttpRequest, slug: str) -> HttpResponse:
    """The collection's webhooks with their latest deliveries, and the form adding one."""
    collection = organised_collection(request, slug)
    form = WebhookForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            subscription = subscription_create(
                collection=collection,
                url=form.cleaned_data["url"],
                events=form.cleaned_data["events"],
                created_by=acting_user(request),
            )
        except ValidationError as error:
            refusal_to_form(form, error)
        else:
            messages.success(request, f"Deliveries to {subscription.url} start with the next event")
            return redirect("collection-webhooks", slug=collection.slug)
    subscriptions = subscriptions_with_log(collection=collection, rows=LOG_ROWS)
    context = {"collection": collection, "form": form, "subscriptions": subscriptions}
    return render(request, "annotations/webhooks/list.html", context)


@login_required
@require_POST
def webhook_test(request: HttpRequest, slug: str, webhook_id: int) -> HttpResponse:
    collection = organised_collection(request, slug)
    subscription = _subscription(collection, webhook_id)
    subscription_test(subscription)
    messages.success(request, f"A webhook.test event is on its way to {subscription.url}.")
    return redirect("collection-webhooks", slug=collection.slug)


@login_required
@require_POST
def webhook_delete(request: HttpRequest, slug: str, webhook_id: int) -> HttpResponse:
    collection = organised_collection(request, slug)
    subscription = _subscription(collection, webhook_id)
    subscription_delete(subscription)
    messages.success(request, f"Deleted the webhook to {subscription.url}.")
    return redirect("collection-webhooks", slug=collection.slug)
