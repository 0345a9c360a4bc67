"""Load the demo collection (the worked example of ndcg.md and two more queries), accounts,
and a small assignment waiting for the demo assessor."""

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from annotations import services
from annotations.models import Collection, Membership, Pool
from annotations.selectors import judging

DATA = Path(__file__).resolve().parents[2] / "demo_data"
RUNS = ["run_example.txt", "run_bm25.txt", "run_random.txt"]
POOL = "demo"


def accounts_file() -> Path:
    """Where the demo's accounts are written (NDCG_DEMO_ACCOUNTS_FILE; not in git)."""
    return Path(settings.NDCG_DEMO_ACCOUNTS_FILE)


class Command(BaseCommand):
    help = "Create the demo collection and a demo organiser and assessor (passwords printed)"

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            collection = Collection.objects.filter(slug="demo").first()
            if collection is None:
                collection = services.collection_create(
                    slug="demo",
                    name="Demo collection",
                    description="The worked example of ndcg.md (query q1, run 'example') "
                    "and two more queries.",
                    cutoffs=[5, 6, 10, 20],
                )
            services.topics_import(collection=collection, source=DATA / "topics.jsonl")
            services.documents_import(collection=collection, source=DATA / "documents.jsonl")
            summary = services.judgements_import(
                collection=collection,
                source=DATA / "qrels.txt",
                assessor=services.import_assessor(),
            )
            for name in RUNS:
                services.run_import(collection=collection, source=DATA / name, replace=True)
            accounts = {
                "organiser": self._account("organiser", staff=True),
                "assessor": self._account("assessor", staff=False),
            }
            for username, role in (
                ("organiser", Membership.ORGANISER),
                ("assessor", Membership.ASSESSOR),
            ):
                Membership.objects.get_or_create(
                    collection=collection, user=accounts[username][0], role=role
                )
            waiting = self._assignment(
                collection, accounts["organiser"][0], accounts["assessor"][0]
            )
        lines = [
            f"  {username:<10} password: {password}" for username, (_, password) in accounts.items()
        ]
        path = accounts_file()
        path.write_text("\n".join(["demo accounts (log in at /accounts/login/)", *lines, ""]))
        path.chmod(0o600)
        self.stdout.write(f"demo collection loaded (judgements: {summary})")
        self.stdout.write(f"  pool {POOL!r}: {waiting} pairs waiting in the assessor's queue")
        for line in lines:
            self.stdout.write(line)
        self.stdout.write(f"accounts written to {path}")

    def _assignment(self, collection: Collection, organiser: Any, assessor: Any) -> int:
        """Pool the runs' unjudged top 10 once and hand it to the assessor; pairs waiting."""
        pool = Pool.objects.filter(collection=collection, name=POOL).first()
        if pool is None:
            pool, _ = services.pool_build(
                collection=collection, name=POOL, depth=10, created_by=organiser
            )
            services.assignment_create(pool=pool, assessors=[assessor], created_by=organiser)
        return sum(
            progress.left
            for assignment, progress in judging.assignments_of(user=assessor)
            if assignment.pool_id == pool.id
        )

    def _account(self, username: str, *, staff: bool) -> tuple[Any, str]:
        """Create or reset a demo account with a fresh random password."""
        user, _ = get_user_model().objects.get_or_create(username=username)
        password = secrets.token_urlsafe(9)
        user.set_password(password)
        user.is_staff = staff
        user.is_superuser = staff
        user.save()
        return user, password
