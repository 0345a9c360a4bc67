"""API tokens: exchange a username and password for the caller's token, or revoke it.

Logins here count towards the same lockout as the login page (django-axes): after
NDCG_LOGIN_FAILURES failures for one account from one address, or that many from each of
several addresses (`lockouts.ACCOUNT_ADDRESSES`), the endpoint answers 429 in the error
shape until the cool-off has passed. A new password revokes the account's token
(annotations/signals.py).
"""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from annotations.apis._base import ApiView, calling_user, documented_errors
from annotations.serializers.tokens import (
    TokenRequestSerializer,
    TokenSerializer,
)


class TokenApi(ApiView):
    permission_classes = [AllowAny]

    @extend_schema(
        summary="The caller's API token, for a username and password",
        description=(
            "Creates the token on first use and returns the same token afterwards. Failed "
            "attempts count towards the login lockout (429 once locked out)."
        ),
        request=TokenRequestSerializer,
        responses={200: TokenSerializer, **documented_errors(400, 401, 415, 429)},
        auth=[],
    )
    def post(self, request: Request) -> Response:
        given = TokenRequestSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        # The Django request: django-axes marks a lockout on it and its middleware answers.
        user = authenticate(
            request._request,
            username=given.validated_data["username"],
            password=given.validated_data["password"],
        )
        if getattr(request._request, "axes_locked_out", False):
            return Response(status=status.HTTP_429_TOO_MANY_REQUESTS)  # replaced by axes
        if user is None or not user.is_active:
            raise AuthenticationFailed("Unable to log in with this username and password.")
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key, "username": user.get_username()})

    @extend_schema(
        summary="Revoke the caller's API token",
        request=None,
        responses={204: None, **documented_errors(401)},
    )
    def delete(self, request: Request) -> Response:
        if not request.user.is_authenticated:
            raise NotAuthenticated()
        Token.objects.filter(user=calling_user(request)).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
