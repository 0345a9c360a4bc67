"""Pages through a real browser and the test client: login, collection list and overview."""

import pytest
from django.test import Client

from annotations.models import Collection, Membership
from tests.factories import MembershipFactory, UserFactory


@pytest.mark.browser
def test_a_system_owner_logs_in_and_sees_the_worked_example_scores(
    worked_example: Collection, page, login
) -> None:  # type: ignore[no-untyped-def]
    user = UserFactory(username="bob")
    MembershipFactory(collection=worked_example, user=user, role=Membership.OWNER)
    login("bob")
    page.click("text=demo")
    page.click("nav.cutoffs >> text=6")
    row = page.locator("#leaderboard tbody tr").first
    assert "example" in row.inner_text()
    assert "0.7850" in row.inner_text()


def test_collection_pages_need_login(client: Client, worked_example: Collection) -> None:
    response = client.get(f"/collections/{worked_example.slug}/")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_non_member_cannot_open_a_collection(client: Client, worked_example: Collection) -> None:
    client.force_login(UserFactory(username="stranger"))
    assert client.get(f"/collections/{worked_example.slug}/").status_code == 404
    assert worked_example.slug not in client.get("/").content.decode()


def test_the_overview_serves_the_stored_leaderboard_and_says_when_it_is_behind(
    client: Client, worked_example: Collection
) -> None:
    from annotations.models import Judgement, LeaderboardSnapshot
    from annotations.scores import snapshots

    owner = UserFactory(username="owner")
    MembershipFactory(collection=worked_example, user=owner, role=Membership.OWNER)
    client.force_login(owner)
    snapshots.leaderboard_current(collection=worked_example, k=6)
    body = client.get(f"/collections/{worked_example.slug}/?k=6").content.decode()
    assert "0.7850" in body and "being computed" not in body and "before the latest" not in body

    # A judgement moves the scores past the stored board: the overview shows the stored rows,
    # marked, until a worker stores the new ones (a read computes nothing).
    LeaderboardSnapshot.objects.filter(collection=worked_example).update(stamp="an older stamp")
    body = client.get(f"/collections/{worked_example.slug}/?k=6").content.decode()
    assert "0.7850" in body and "before the latest changes" in body

    LeaderboardSnapshot.objects.filter(collection=worked_example).delete()
    body = client.get(f"/collections/{worked_example.slug}/?k=6").content.decode()
    assert "being computed" in body and "0.7850" not in body
    assert not LeaderboardSnapshot.objects.filter(collection=worked_example).exists()
    assert Judgement.objects.filter(query__collection=worked_example).exists()


def test_the_overview_counts_follow_new_documents_and_judgements(
    client: Client, worked_example: Collection
) -> None:
    from annotations.models import Document

    owner = UserFactory(username="owner")
    MembershipFactory(collection=worked_example, user=owner, role=Membership.OWNER)
    client.force_login(owner)

    def counts() -> str:
        body = client.get(f"/collections/{worked_example.slug}/").content.decode()
        start = body.index('<p class="meta">')
        return body[start : body.index("</p>", start)]

    documents = worked_example.documents.count()
    assert f"{documents} documents" in counts()
    Document.objects.create(collection=worked_example, docno="a-new-one")
    assert f"{documents + 1} documents" in counts()
