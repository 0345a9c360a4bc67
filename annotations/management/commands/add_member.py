"""Give existing accounts a role in a collection, by the members page's rules."""

from functools import partial
from typing import Any

from django.db import transaction

from annotations import services
from annotations.management.commands._base import (
    CollectionCommand,
    collection_get,
    run_reporting_errors,
)
from annotations.management.commands.build_pool import names
from annotations.models import Membership


class Command(CollectionCommand):
    help = (
        "Give accounts that log in a role in the collection (assessor by default), as the "
        "members page and POST .../members/ do: the way to make people assessors before "
        "`assign` hands them pairs"
    )

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument("usernames", help="usernames, comma-separated")
        parser.add_argument(
            "--role",
            default=Membership.ASSESSOR,
            choices=[role for role, _ in Membership.ROLE_CHOICES],
            help="the role given (default: assessor)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        collection = collection_get(options["slug"])
        added = names(options["usernames"])
        with transaction.atomic():  # one refused name: nobody is added
            for username in added:
                run_reporting_errors(
                    partial(
                        services.membership_add,
                        collection=collection,
                        username=username,
                        role=options["role"],
                    )
                )
        for username in added:
            self.stdout.write(f"{username}: {options['role']} of {collection.slug}")
