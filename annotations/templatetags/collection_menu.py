"""The one menu of every collection page, filtered by what the viewer sees (annotations.access)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import NoReverseMatch, reverse

from annotations.access import Access, collection_access
from annotations.models import Collection

register = template.Library()


def menu_entries(collection: Collection, access: Access) -> list[tuple[str, str, str]]:
    """(key, label, url) of the menu entries the viewer may open, in menu order."""
    slug = (collection.slug,)
    assessing = not access.organiser and "assessor" in access.roles
    entries = [
        ("overview", "Overview", "collection-detail", slug, access.member),
        ("dashboard", "Dashboard", "collection-dashboard", slug, access.organiser),
        ("leaderboard", "Leaderboard", "leaderboard", slug, access.leaderboard),
        ("runs", "Runs", "collection-runs", slug, access.runs),
        ("compare", "Compare", "compare", slug, access.any_run_scores),
        ("queries", "Queries", "queries", slug, access.queries),
        ("judging", "Judging", "judging-pools", slug, access.organiser),
        ("judging", "My judging", "judging-queue", (), assessing),
        ("agreement", "Agreement", "judging-agreement", slug, access.organiser),
        ("judges", "Machine judges", "collection-judges", slug, access.organiser),
        ("systems", "Search systems", "collection-systems", slug, access.organiser),
        ("versions", "Versions", "qrels-versions", slug, access.organiser),
        ("import", "Import", "collection-imports", slug, access.organiser),
        ("members", "Members", "collection-members", slug, access.organiser),
        ("export", "Export", "collection-exports", slug, access.organiser),
        ("webhooks", "Webhooks", "collection-webhooks", slug, access.organiser),
        ("settings", "Settings", "collection-edit", slug, access.organiser),
        ("api", "API docs", "api-docs", (), access.member),
    ]
    shown = []
    for key, label, name, args, visible in entries:
        if not visible:
            continue
        try:
            shown.append((key, label, reverse(name, args=args)))
        except NoReverseMatch:  # a page this installation does not have (yet)
            continue
    return shown


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
