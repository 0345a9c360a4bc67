"""The one menu of every collection page, filtered by what the viewer sees (annotations.access)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from annotations.access import Access, collection_access
from annotations.models import Collection

register = template.Library()


def menu_entries(collection: Collection, access: Access) -> list[tuple[str, str, str]]:
    """(key, label, url) of the menu entries the viewer may open, in menu order."""
    slug = collection.slug
    entries: list[tuple[str, str, str, bool]] = [
        ("overview", "Overview", reverse("collection-detail", args=[slug]), access.member),
        ("leaderboard", "Leaderboard", reverse("leaderboard", args=[slug]), access.leaderboard),
        ("runs", "Runs", reverse("collection-runs", args=[slug]), access.runs),
        ("judging", "Judging", reverse("judging-pools", args=[slug]), access.organiser),
        (
            "judging",
            "My judging",
            reverse("judging-queue"),
            not access.organiser and "assessor" in access.roles,
        ),
        ("agreement", "Agreement", reverse("judging-agreement", args=[slug]), access.organiser),
        ("members", "Members", reverse("collection-members", args=[slug]), access.organiser),
        ("export", "Export", reverse("collection-exports", args=[slug]), access.organiser),
        ("settings", "Settings", reverse("collection-edit", args=[slug]), access.organiser),
        ("api", "API docs", reverse("api-docs"), access.member),
    ]
    return [(key, label, url) for key, label, url, shown in entries if shown]


@register.inclusion_tag("annotations/_collection_menu.html", takes_context=True)
def collection_menu(context: Any, collection: Collection, current: str = "") -> dict[str, Any]:
    request = context["request"]
    access = context.get("access")
    if not isinstance(access, Access):
        access = collection_access(user=request.user, collection=collection)
    return {
        "collection": collection,
        "entries": menu_entries(collection, access),
        "current": current,
    }
