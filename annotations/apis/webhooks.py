"""Webhooks (organisers): subscribe a URL to the collection's events, read the delivery log."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.apis._base import (
    STAFF_ROLES,
    CollectionApiView,
    CollectionListApiView,
    calling_user,
    created,
    documented_errors,
    is_schema_view,
)
from annotations.models import WebhookDelivery, WebhookSubscription
from annotations.serializers.webhooks import (
    WebhookCreateSerializer,
    WebhookDeliverySerializer,
    WebhookSerializer,
)
from annotations.services.webhooks import (
    subscription_create,
    subscription_delete,
    subscription_test,
)

SIGNING = (
    "Deliveries are POSTed as JSON (`type`, `timestamp`, `data`) and signed as the Standard "
    "Webhooks spec says: headers `webhook-id` (the same over retries: deduplicate by it), "
    "`webhook-timestamp` and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of "
    "`id.timestamp.body` with the subscription's secret). A 2xx answer delivers; anything "
    "else is retried with backoff (Retry-After honoured), then marked failed."
)


class _WebhookApiView(CollectionApiView):
    roles = {"GET": STAFF_ROLES, "POST": STAFF_ROLES, "DELETE": STAFF_ROLES}

    def subscription(self, webhook_id: int) -> WebhookSubscription:
        found = WebhookSubscription.objects.filter(
            collection=self.collection, id=webhook_id
        ).first()
        if found is None:
            raise NotFound("No such webhook.")
        return found


class WebhookListApi(CollectionListApiView, _WebhookApiView):
    serializer_class = WebhookSerializer

    def get_queryset(self) -> QuerySet[WebhookSubscription]:
        if is_schema_view(self):
            return WebhookSubscription.objects.none()
        return WebhookSubscription.objects.filter(collection=self.collection).select_related(
            "created_by"
        )

    @extend_schema(
        summary="The collection's webhooks",
        responses={200: WebhookSerializer(many=True), **documented_errors(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return self.list_response(self.get_queryset())

    @extend_schema(
        summary="Subscribe a URL to the collection's events",
        description=SIGNING + " Targets that resolve to private or loopback addresses are "
        "refused unless the server allows them (NDCG_WEBHOOK_ALLOW_PRIVATE).",
        request=WebhookCreateSerializer,
        responses={201: WebhookSerializer, **documented_errors(400, 401, 403, 404, 415)},
    )
    def post(self, request: Request, slug: str) -> Response:
        given = WebhookCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        subscription = subscription_create(
            collection=self.collection, created_by=calling_user(request), **given.validated_data
        )
        return created(
            WebhookSerializer(subscription).data,
            request,
            "webhook",
            slug=self.collection.slug,
            webhook_id=subscription.id,
        )


class WebhookDetailApi(_WebhookApiView):
    @extend_schema(
        summary="One webhook",
        responses={200: WebhookSerializer, **documented_errors(401, 403, 404)},
    )
    def get(self, request: Request, slug: str, webhook_id: int) -> Response:
        return Response(WebhookSerializer(self.subscription(webhook_id)).data)

    @extend_schema(
        summary="Delete a webhook and its delivery log (nothing more is sent to it)",
        responses={204: OpenApiResponse(description="Deleted"), **documented_errors(401, 403, 404)},
    )
    def delete(self, request: Request, slug: str, webhook_id: int) -> Response:
        subscription_delete(self.subscription(webhook_id))
        return Response(status=204)


class WebhookTestSerializer(serializers.Serializer):
    queued = serializers.BooleanField()


class WebhookTestApi(_WebhookApiView):
    @extend_schema(
        summary="Send a `webhook.test` event to the webhook (queued like any delivery)",
        request=None,
        responses={202: WebhookTestSerializer, **documented_errors(401, 403, 404)},
    )
    def post(self, request: Request, slug: str, webhook_id: int) -> Response:
        subscription_test(self.subscription(webhook_id))
        return Response({"queued": True}, status=202)


class WebhookDeliveryListApi(CollectionListApiView, _WebhookApiView):
    serializer_class = WebhookDeliverySerializer

    def get_queryset(self) -> QuerySet[WebhookDelivery]:
        if is_schema_view(self):
            return WebhookDelivery.objects.none()
        return WebhookDelivery.objects.filter(
            subscription=self.subscription(int(self.kwargs["webhook_id"]))
        ).order_by("-id")

    @extend_schema(
        summary="The webhook's deliveries, newest first: state, attempts, last answer",
        responses={
            200: WebhookDeliverySerializer(many=True),
            **documented_errors(400, 401, 403, 404),
        },
    )
    def get(self, request: Request, slug: str, webhook_id: int) -> Response:
        return self.list_response(self.get_queryset())
