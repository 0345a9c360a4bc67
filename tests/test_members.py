"""The members page: add users, create accounts with a one-time link, roles, the last organiser."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from annotations.models import Collection, Membership
from tests.factories import UserFactory

PAGE = "/collections/trial/members/"


def as_user(username: str | None) -> Client:
    client = Client()
    if username:
        client.force_login(get_user_model().objects.get(username=username))
    return client


def _logs_in(username: str, password: str) -> bool:
    response = Client().post("/accounts/login/", {"username": username, "password": password})
    return response.status_code == 302


def _membership(username: str, role: str) -> Membership:
    return Membership.objects.get(collection__slug="trial", user__username=username, role=role)


def test_only_organisers_open_the_members_page(trial: Collection) -> None:
    assert as_user("olga").get(PAGE).status_code == 200
    assert as_user("alice").get(PAGE).status_code == 403
    assert as_user("eve").get(PAGE).status_code == 404
    assert as_user(None).get(PAGE).status_code == 302


def test_an_organiser_adds_an_existing_user_with_a_role(trial: Collection) -> None:
    response = as_user("olga").post(PAGE, {"action": "add", "username": "eve", "role": "owner"})
    assert response.status_code == 302
    assert _membership("eve", "owner")
    again = as_user("olga").post(PAGE, {"action": "add", "username": "eve", "role": "owner"})
    assert again.status_code == 400 and "eve already has this role" in again.content.decode()
    missing = as_user("olga").post(PAGE, {"action": "add", "username": "nobody", "role": "owner"})
    html = missing.content.decode()
    assert missing.status_code == 400 and "No account is called &#x27;nobody&#x27;" in html
    assert 'class="error-summary"' in html  # the summary at the top and the inline error


def test_a_new_account_gets_a_one_time_set_password_link(trial: Collection) -> None:
    response = as_user("olga").post(
        PAGE, {"action": "create", "username": "nina", "email": "", "role": "assessor"}
    )
    assert response.status_code == 200
    link = response.context["link"]
    assert link["mailed"] is False and link["url"].startswith("http://testserver/accounts/reset/")
    nina = get_user_model().objects.get(username="nina")
    assert not nina.has_usable_password() and _membership("nina", "assessor")

    visitor = Client()
    form = visitor.get(link["url"], follow=True)  # Django moves the token into the session
    assert form.status_code == 200 and form.context["validlink"]
    done = visitor.post(
        form.redirect_chain[-1][0],
        {"new_password1": "a-long-pass-phrase-9", "new_password2": "a-long-pass-phrase-9"},
    )
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    assert _logs_in("nina", "a-long-pass-phrase-9")
    reused = Client().get(link["url"], follow=True)
    assert not reused.context["validlink"]  # the link worked once


def test_the_link_is_mailed_when_mail_is_configured(trial: Collection, settings: Any) -> None:
    settings.NDCG_SEND_MAIL = True
    response = as_user("olga").post(
        PAGE, {"action": "create", "username": "mo", "email": "mo@example.org", "role": "owner"}
    )
    assert response.context["link"]["mailed"] is True
    assert len(mail.outbox) == 1 and response.context["link"]["url"] in mail.outbox[0].body


def test_a_taken_or_invalid_username_is_refused_and_nothing_is_created(trial: Collection) -> None:
    for username, problem in (("Alice", "An account with this username exists"), ("a b", "")):
        response = as_user("olga").post(
            PAGE, {"action": "create", "username": username, "role": "assessor"}
        )
        assert response.status_code == 400 and problem in response.content.decode()
    assert get_user_model().objects.filter(username__in=["Alice", "a b"]).count() == 0


def test_links_only_for_accounts_without_a_password_and_never_for_staff(
    trial: Collection,
) -> None:
    alice = _membership("alice", "assessor")
    response = as_user("olga").post(f"{PAGE}{alice.id}/link/", follow=True)
    assert "alice has set a password" in response.content.decode()
    root = UserFactory(username="root", is_staff=True)
    root.set_unusable_password()
    root.save()
    staff = Membership.objects.create(collection=trial, user=root, role="assessor")
    response = as_user("olga").post(f"{PAGE}{staff.id}/link/", follow=True)
    assert "root is staff: set its password in the admin." in response.content.decode()
    assert "/accounts/reset/" not in response.content.decode()


def test_roles_change_and_the_last_organiser_stays(trial: Collection) -> None:
    alice = _membership("alice", "assessor")
    as_user("olga").post(f"{PAGE}{alice.id}/role/", {"role": "owner"})
    assert _membership("alice", "owner").id == alice.id
    olga = _membership("olga", "organiser")
    response = as_user("olga").post(f"{PAGE}{olga.id}/role/", {"role": "assessor"}, follow=True)
    assert "last organiser stays an organiser" in response.content.decode()
    assert _membership("olga", "organiser")
    removal = as_user("olga").post(f"{PAGE}{olga.id}/remove/", follow=True)
    assert "last organiser cannot be removed" in removal.content.decode()
    assert _membership("olga", "organiser")


def test_removing_a_member_confirms_first(trial: Collection) -> None:
    bob = _membership("bob", "assessor")
    confirm = as_user("olga").get(f"{PAGE}{bob.id}/remove/").content.decode()
    assert "Remove bob as assessor?" in confirm and "judgements, assignments" in confirm
    assert Membership.objects.filter(id=bob.id).exists()
    as_user("olga").post(f"{PAGE}{bob.id}/remove/")
    assert not Membership.objects.filter(id=bob.id).exists()
    assert get_user_model().objects.filter(username="bob").exists()


def test_another_collections_membership_is_not_found(trial: Collection) -> None:
    from tests.factories import CollectionFactory

    other = Membership.objects.create(
        collection=CollectionFactory(slug="other"), user=UserFactory(username="x"), role="owner"
    )
    assert as_user("olga").post(f"{PAGE}{other.id}/remove/").status_code == 404


def test_every_user_changes_their_own_password(trial: Collection) -> None:
    client = as_user("alice")
    assert 'href="/accounts/password/"' in client.get("/judging/").content.decode()
    response = client.post(
        "/accounts/password/",
        {
            "old_password": "pass-word-123",
            "new_password1": "another-pass-phrase-7",
            "new_password2": "another-pass-phrase-7",
        },
    )
    assert response.status_code == 302 and response["Location"] == "/accounts/password/done/"
    assert _logs_in("alice", "another-pass-phrase-7")
    wrong = client.post(
        "/accounts/password/",
        {
            "old_password": "nope",
            "new_password1": "x-y-z-1234567",
            "new_password2": "x-y-z-1234567",
        },
    )
    assert wrong.status_code == 200 and "error-summary" in wrong.content.decode()
