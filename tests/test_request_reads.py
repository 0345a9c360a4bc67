"""The reads every API request makes (its token, the collection and the caller's roles) give
what the ORM gives, in one plain statement each on PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.test import APIClient

from annotations.access import collection_with_roles, roles_of
from annotations.authentication import PreparedTokenAuthentication
from annotations.models import Collection, Membership
from tests.factories import CollectionFactory, UserFactory

pytestmark = pytest.mark.django_db


def fields(instance: Any) -> dict[str, Any]:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_the_token_read_gives_drfs_user_and_token_and_errors() -> None:
    user = UserFactory(username="reader", email="r@example.org", first_name="Ré")
    token = Token.objects.create(user=user)
    found_user, found_token = PreparedTokenAuthentication().authenticate_credentials(token.key)
    assert fields(found_user) == fields(User.objects.get(pk=user.pk))
    assert fields(found_token) == fields(Token.objects.get(pk=token.pk))
    assert found_token.user is found_user and not found_user._state.adding
    with pytest.raises(AuthenticationFailed, match=r"Invalid token\."):
        PreparedTokenAuthentication().authenticate_credentials("0" * 40)
    User.objects.filter(pk=user.pk).update(is_active=False)
    with pytest.raises(AuthenticationFailed, match=r"User inactive or deleted\."):
        PreparedTokenAuthentication().authenticate_credentials(token.key)


def test_the_api_answers_a_token_as_before() -> None:
    user = UserFactory(username="caller")
    collection = CollectionFactory()
    Membership.objects.create(collection=collection, user=user, role=Membership.ORGANISER)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    answer = client.get(f"/api/v1/collections/{collection.slug}/")
    assert answer.status_code == 200 and answer.json()["slug"] == collection.slug
    client.credentials(HTTP_AUTHORIZATION="Token " + "f" * 40)
    answer = client.get(f"/api/v1/collections/{collection.slug}/")
    assert answer.status_code == 401 and "Invalid token." in answer.content.decode()


def test_the_collection_and_roles_are_the_orms_for_every_kind_of_caller() -> None:
    collection = CollectionFactory(cutoffs=[3, 10])
    Collection.objects.filter(pk=collection.pk).update(public_leaderboard=True)
    CollectionFactory()  # another collection, other memberships
    both = UserFactory(username="both")
    for role in (Membership.ORGANISER, Membership.OWNER):
        Membership.objects.create(collection=collection, user=both, role=role)
    stranger = UserFactory(username="stranger")
    staff = UserFactory(username="staff", is_staff=True)
    for user in (both, stranger, staff, AnonymousUser()):
        found, roles = collection_with_roles(slug=collection.slug, user=user)
        assert found is not None and fields(found) == fields(
            Collection.objects.get(pk=collection.pk)
        )
        assert roles == roles_of(user=user, collection=collection), user
    assert collection_with_roles(slug=collection.slug, user=both)[1] == {"organiser", "owner"}
    assert collection_with_roles(slug="no-such-collection", user=both) == (None, frozenset())


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
def test_a_request_reads_its_token_and_collection_by_prepared_statements() -> None:
    user = UserFactory(username="repeat")
    collection = CollectionFactory()
    Membership.objects.create(collection=collection, user=user, role=Membership.ASSESSOR)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    for _ in range(7):
        assert client.get(f"/api/v1/collections/{collection.slug}/queries/").status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [text for (text,) in cursor.fetchall()]
    assert any("authtoken_token" in text for text in prepared), prepared
    assert any("ARRAY(SELECT m.role" in text for text in prepared), prepared
