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
    assert missing.status_code == 400 and "&#x27;nobody&#x27; cannot be added" in html
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
    settings.EMAIL_HOST = "smtp.example.org"  # mail configured (the tests' backend keeps it)
    response = as_user("olga").post(
        PAGE, {"action": "create", "username": "mo", "email": "mo@example.org", "role": "owner"}
    )
    assert response.context["link"]["mailed"] is True
    assert len(mail.outbox) == 1 and response.context["link"]["url"] in mail.outbox[0].body


def test_a_taken_or_invalid_username_is_refused_and_nothing_is_created(trial: Collection) -> None:
    for username, problem in (("Alice", "This username is taken"), ("a b", "")):
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
    assert "New set-password link" not in response.content.decode()
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
    confirm = as_user("olga").get(f"{PAGE}{olga.id}/remove/").content.decode()
    assert "last organiser and cannot be removed" in confirm  # no button the rule refuses
    assert 'type="submit" class="danger"' not in confirm
    removal = as_user("olga").post(f"{PAGE}{olga.id}/remove/", follow=True)
    assert "last organiser cannot be removed" in removal.content.decode()
    assert _membership("olga", "organiser")


def test_removing_a_member_confirms_first(trial: Collection) -> None:
    from annotations import services

    bob = _membership("bob", "assessor")
    pool, _ = services.pool_build(collection=trial, name="main", depth=2)
    [(assignment, _)] = services.assignment_create(pool=pool, assessors=[bob.user])
    first = assignment.items.order_by("position").first()
    assert first is not None
    services.assignment_item_grade(item=first, assessor=bob.user, grade=1)
    left = assignment.items.count() - 1
    confirm = as_user("olga").get(f"{PAGE}{bob.id}/remove/").content.decode()
    assert "Remove bob as assessor?" in confirm and "judgements, assignments" in confirm
    assert f"{left} pairs assigned to bob are not graded yet" in confirm
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


# Accounts belong to the collection that made them: no organiser reaches another collection's
# accounts through Add existing user or a set-password link.


def _second_collection_with_a_new_organiser() -> tuple[Collection, Any]:
    """Collection "other", organised by bea, whose members page creates "newcomer" as an
    organiser of "other" (the account has no password yet)."""
    from tests.factories import CollectionFactory, MembershipFactory

    other = CollectionFactory(slug="other")
    MembershipFactory(collection=other, user=UserFactory(username="bea"), role="organiser")
    response = as_user("bea").post(
        "/collections/other/members/",
        {"action": "create", "username": "newcomer", "email": "", "role": "organiser"},
    )
    assert response.status_code == 200
    return other, response.context["link"]


def test_another_collections_new_account_cannot_be_added_or_given_a_link(
    trial: Collection,
) -> None:
    other, bea_link = _second_collection_with_a_new_organiser()
    take = as_user("olga").post(PAGE, {"action": "add", "username": "newcomer", "role": "owner"})
    nobody = as_user("olga").post(PAGE, {"action": "add", "username": "nobody", "role": "owner"})
    assert take.status_code == nobody.status_code == 400
    # one answer whether the account exists without a password or does not exist at all
    assert take.context["add_form"].errors["username"] == [
        "'newcomer' cannot be added: ask the person for the username they log in with, or "
        "create a new account below."
    ]
    assert nobody.context["add_form"].errors["username"][0].startswith("'nobody' cannot be")
    assert not Membership.objects.filter(collection=trial, user__username="newcomer").exists()

    # Even if it were a member here (staff added it), olga cannot issue its link.
    newcomer = get_user_model().objects.get(username="newcomer")
    membership = Membership.objects.create(collection=trial, user=newcomer, role="assessor")
    page = as_user("olga").get(PAGE).content.decode()
    assert "New set-password link" not in page
    refused = as_user("olga").post(f"{PAGE}{membership.id}/link/", follow=True)
    assert "/accounts/reset/" not in refused.content.decode()
    assert "issued only for an account this collection created" in refused.content.decode()
    # and bea, whose account it is, cannot either while it holds a role in trial
    theirs = Membership.objects.get(collection=other, user=newcomer)
    again = as_user("bea").post(f"/collections/other/members/{theirs.id}/link/", follow=True)
    assert "/accounts/reset/" not in again.content.decode()
    # bea's first link still works for the real person
    visitor = Client()
    form = visitor.get(bea_link["url"], follow=True)
    assert form.context["validlink"]


def test_the_import_account_never_gets_a_link_or_a_role(trial: Collection) -> None:
    from annotations import services
    from annotations.models import AccountOrigin

    trec = services.import_assessor()
    assert AccountOrigin.objects.get(user=trec).system
    added = as_user("olga").post(PAGE, {"action": "add", "username": "trec", "role": "organiser"})
    assert added.status_code == 400 and "cannot be added" in added.content.decode()
    # staff may add it for a moment, but no one issues it a link, not even staff
    membership = Membership.objects.create(collection=trial, user=trec, role="assessor")
    root = UserFactory(username="root", is_staff=True)
    for user in ("olga", "root"):
        response = as_user(user).post(f"{PAGE}{membership.id}/link/", follow=True)
        assert "trec is a system account" in response.content.decode()
        assert "/accounts/reset/" not in response.content.decode()
    assert root.is_staff


def test_links_and_additions_are_audited_for_staff(trial: Collection) -> None:
    from annotations.models import AccountAudit

    created = as_user("olga").post(
        PAGE, {"action": "create", "username": "nina", "email": "", "role": "assessor"}
    )
    nina = _membership("nina", "assessor")
    as_user("olga").post(f"{PAGE}{nina.id}/link/")
    as_user("olga").post(PAGE, {"action": "add", "username": "eve", "role": "owner"})
    as_user("olga").post(f"{PAGE}{nina.id}/role/", {"role": "owner"})
    assert created.status_code == 200
    trail = list(
        AccountAudit.objects.order_by("id").values_list(
            "actor_name", "action", "target_name", "collection_slug", "detail"
        )
    )
    assert trail == [
        ("olga", "created", "nina", "trial", "assessor"),
        ("olga", "link", "nina", "trial", ""),
        ("olga", "link", "nina", "trial", ""),
        ("olga", "added", "eve", "trial", "owner"),
        ("olga", "role", "nina", "trial", "assessor -> owner"),
    ]
    root = UserFactory(username="root", is_staff=True, is_superuser=True)
    listing = as_user("root").get("/admin/annotations/accountaudit/")
    assert listing.status_code == 200 and "nina" in listing.content.decode()
    assert as_user("olga").get("/admin/annotations/accountaudit/").status_code == 302
    assert root.is_superuser


def test_staff_issue_a_link_for_an_account_of_another_collection(trial: Collection) -> None:
    other, _ = _second_collection_with_a_new_organiser()
    newcomer = get_user_model().objects.get(username="newcomer")
    membership = Membership.objects.create(collection=trial, user=newcomer, role="assessor")
    UserFactory(username="root", is_staff=True)
    response = as_user("root").post(f"{PAGE}{membership.id}/link/")
    assert response.status_code == 200 and "/accounts/reset/" in response.context["link"]["url"]
    assert other.slug == "other"


def test_accounts_without_a_password_from_before_get_their_origin_by_migration(
    db: None,
) -> None:
    """Migration 0015's data step: an account without a password holding roles in one
    collection belongs to it; one holding roles in two belongs to none (only staff give it a
    link); `trec` is a system account; accounts with a password get no origin."""
    import importlib

    from django.apps import apps

    from annotations.models import AccountOrigin
    from tests.factories import CollectionFactory

    migration = importlib.import_module("annotations.migrations.0015_account_origins")
    one, two = CollectionFactory(slug="one"), CollectionFactory(slug="two")
    users = {}
    for name in ("solo", "shared", "trec", "withpassword"):
        users[name] = UserFactory(username=name)
        if name != "withpassword":
            users[name].set_unusable_password()
            users[name].save()
    Membership.objects.create(collection=one, user=users["solo"], role="assessor")
    Membership.objects.create(collection=one, user=users["withpassword"], role="assessor")
    for collection in (one, two):
        Membership.objects.create(collection=collection, user=users["shared"], role="owner")
    migration.origins_of_existing_accounts(apps, None)
    rows = {o.user_id: (o.collection_id, o.system) for o in AccountOrigin.objects.all()}
    assert rows == {users["solo"].pk: (one.pk, False), users["trec"].pk: (None, True)}
