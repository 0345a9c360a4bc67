"""Who sees what in a collection: the README's role table as code, for pages and the API.

Assessors are blinded to systems and scores (TREC practice) unless an organiser opens the
leaderboard to them; system owners see the leaderboard and their own runs; organisers (and
staff) see everything. A public leaderboard opens the leaderboard, run pages, run scores and
comparisons to anyone. A user holding several roles sees what any of them sees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection

from annotations import plain_rows
from annotations.bulk import cursor
from annotations.models import Collection, Membership, Run

ORGANISER = Membership.ORGANISER
ASSESSOR = Membership.ASSESSOR
OWNER = Membership.OWNER


@dataclass(frozen=True)
class Access:
    """One user's view of one collection."""

    roles: frozenset[str]
    user_id: int | None
    public: bool
    assessors_see_leaderboard: bool

    @property
    def member(self) -> bool:
        return bool(self.roles)

    @property
    def organiser(self) -> bool:
        return ORGANISER in self.roles

    @property
    def leaderboard(self) -> bool:
        """The leaderboard page, its state document and the leaderboard API."""
        return (
            self.public
            or bool(self.roles & {ORGANISER, OWNER})
            or (ASSESSOR in self.roles and self.assessors_see_leaderboard)
        )

    @property
    def runs(self) -> bool:
        """The list of runs (names, owners, sizes): organisers and system owners."""
        return bool(self.roles & {ORGANISER, OWNER})

    @property
    def any_run_scores(self) -> bool:
        """Whether some run's page or per-query scores may be open to this user."""
        return self.public or bool(self.roles & {ORGANISER, OWNER})

    def run_scores(self, run: Run) -> bool:
        """A run's page, its per-query scores and its comparisons."""
        return self.public or self.organiser or self.owns(run)

    @property
    def run_links(self) -> str:
        """Which run pages a leaderboard links: "all", "own" (the user's runs) or "none"."""
        if self.public or self.organiser:
            return "all"
        return "own" if OWNER in self.roles else "none"

    def owns(self, run: Run) -> bool:
        return OWNER in self.roles and self.user_id is not None and run.owner_id == self.user_id

    def may_change_run(self, run: Run) -> bool:
        """Download, describe, replace or delete a run: organisers, and the run's owner."""
        return self.organiser or self.owns(run)

    @property
    def queries(self) -> bool:
        """Query pages show every run's ranking of the query: organisers only."""
        return self.organiser


def roles_of(*, user: Any, collection: Collection) -> frozenset[str]:
    """The user's roles in a collection; staff hold every role, anonymous users none."""
    if user is None or not user.is_authenticated:
        return frozenset()
    if user.is_staff:
        return frozenset({ORGANISER, ASSESSOR, OWNER})
    return frozenset(
        Membership.objects.filter(collection=collection, user=user).values_list("role", flat=True)
    )


def collection_with_roles(*, slug: str, user: Any) -> tuple[Collection | None, frozenset[str]]:
    """The collection of a slug (None: no such collection) and the user's roles in it, as
    `roles_of` gives them: what every API request on a collection reads first. On
    PostgreSQL one plain statement, prepared once per connection."""
    if connection.vendor != "postgresql":
        found = Collection.objects.filter(slug=slug).first()
        return found, frozenset() if found is None else roles_of(user=user, collection=found)
    member = user.pk if user is not None and user.is_authenticated and not user.is_staff else None
    quote = connection.ops.quote_name
    with cursor() as rows:
        rows.execute(
            f"SELECT {plain_rows.columns(Collection, 'c')}, ARRAY(SELECT m.role "
            f"FROM {quote(Membership._meta.db_table)} m "
            "WHERE m.collection_id = c.id AND m.user_id = %s) "
            f"FROM {quote(Collection._meta.db_table)} c WHERE c.slug = %s",
            [member, slug],
        )
        row = rows.fetchone()
    if row is None:
        return None, frozenset()
    collection = plain_rows.instance(Collection, row[:-1])
    if member is None:
        return collection, roles_of(user=user, collection=collection)  # staff, or nobody
    return collection, frozenset(row[-1])


def collection_access(
    *, user: Any, collection: Collection, roles: frozenset[str] | None = None
) -> Access:
    """What `user` may see of `collection` (`roles` when the caller already read them)."""
    held = roles_of(user=user, collection=collection) if roles is None else roles
    return Access(
        roles=held,
        user_id=user.pk if user is not None and user.is_authenticated else None,
        public=collection.public_leaderboard,
        assessors_see_leaderboard=collection.assessors_see_leaderboard,
    )
