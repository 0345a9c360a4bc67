"""API token authentication at the cost of one prepared statement."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from annotations import plain_rows
from annotations.bulk import cursor


class PreparedTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, the token and its user read by one plain statement.

    Every API request authenticates; DRF's `select_related` query is built by the ORM each
    time. On PostgreSQL this reads the same rows with a fixed text, prepared once per
    connection; elsewhere (SQLite) DRF's own lookup runs. The answers and errors are DRF's.
    """

    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        if connection.vendor != "postgresql":
            return super().authenticate_credentials(key)  # type: ignore[no-any-return]
        user_model = get_user_model()
        quote = connection.ops.quote_name
        owner = Token._meta.get_field("user").column
        with cursor() as found:
            found.execute(
                f"SELECT {plain_rows.columns(Token, 't')}, {plain_rows.columns(user_model, 'u')} "
                f"FROM {quote(Token._meta.db_table)} t JOIN {quote(user_model._meta.db_table)} u "
                f"ON u.{quote(user_model._meta.pk.column)} = t.{quote(owner)} "
                "WHERE t.key = %s",
                [key],
            )
            row = found.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        split = plain_rows.width(Token)
        token = plain_rows.instance(Token, row[:split])
        user = plain_rows.instance(user_model, row[split:])
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        token.user = user  # as select_related leaves it: no second read
        return user, token
