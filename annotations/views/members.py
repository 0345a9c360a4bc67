"""The members page of a collection: add users, create accounts, change roles, remove."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotations import services
from annotations.forms.members import AccountCreateForm, MemberAddForm, RoleForm
from annotations.models import Collection, Membership
from annotations.selectors.judging import unjudged_assigned
from annotations.views._collection import collection_for
from annotations.views._forms import refusal_to_form


def _page(
    request: HttpRequest,
    collection: Collection,
    *,
    add_form: MemberAddForm | None = None,
    create_form: AccountCreateForm | None = None,
    link: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    memberships = (
        Membership.objects.filter(collection=collection)
        .select_related("user")
        .order_by("user__username", "role")
    )
    context = {
        "collection": collection,
        "memberships": memberships,
        "linkable": services.link_candidates(collection=collection, actor=_actor(request)),
        "roles": Membership.ROLE_CHOICES,
        "add_form": add_form or MemberAddForm(),
        "create_form": create_form or AccountCreateForm(),
        "link": link,
    }
    return render(request, "annotations/members/members.html", context, status=status)


def _actor(request: HttpRequest) -> User:
    """The organiser (or staff) acting: the pages below require a login."""
    return cast(User, request.user)


def _link(request: HttpRequest, collection: Collection, user: Any) -> dict[str, Any]:
    path = services.account_password_link(user=user, collection=collection, actor=_actor(request))
    url = request.build_absolute_uri(path)
    mailed = services.account_password_link_send(user=user, url=url, collection=collection)
    return {"user": user, "url": url, "mailed": mailed}


@login_required
def members(request: HttpRequest, slug: str) -> HttpResponse:
    collection, _ = collection_for(request, slug, sees="organiser")
    if request.method != "POST":
        return _page(request, collection)
    if request.POST.get("action") == "create":
        create_form = AccountCreateForm(request.POST)
        if create_form.is_valid():
            data = create_form.cleaned_data
            try:
                user = services.account_create(
                    collection=collection,
                    username=data["username"],
                    email=data["email"],
                    role=data["role"],
                    actor=_actor(request),
                )
            except ValidationError as error:
                refusal_to_form(create_form, error)
            else:
                # Rendered, not redirected: the link is shown once, to this organiser only.
                return _page(request, collection, link=_link(request, collection, user))
        return _page(request, collection, create_form=create_form, status=400)
    add_form = MemberAddForm(request.POST)
    if add_form.is_valid():
        username = add_form.cleaned_data["username"]
        try:
            services.membership_add(
                collection=collection,
                username=username,
                role=add_form.cleaned_data["role"],
                actor=_actor(request),
            )
        except ValidationError as error:
            refusal_to_form(add_form, error)
        else:
            messages.success(request, f"{username} added.")
            return redirect("collection-members", slug=collection.slug)
    return _page(request, collection, add_form=add_form, status=400)


def _membership(request: HttpRequest, slug: str, membership_id: int) -> Membership:
    collection, _ = collection_for(request, slug, sees="organiser")
    return get_object_or_404(
        Membership.objects.select_related("user", "collection"),
        id=membership_id,
        collection=collection,
    )


@login_required
@require_POST
def member_role(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    membership = _membership(request, slug, membership_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose one of the roles.")
    else:
        try:
            services.membership_change_role(
                membership=membership, role=form.cleaned_data["role"], actor=_actor(request)
            )
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(
                request, f"{membership.user.get_username()} is now {form.cleaned_data['role']}."
            )
    return redirect("collection-members", slug=slug)


@login_required
def member_remove(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    """A confirmation page (GET) that says what is lost; POST removes the role."""
    membership = _membership(request, slug, membership_id)
    if request.method == "POST":
        try:
            services.membership_remove(membership=membership, actor=_actor(request))
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(
                request,
                f"{membership.user.get_username()} is no longer {membership.get_role_display()}.",
            )
        return redirect("collection-members", slug=slug)
    collection = membership.collection
    context = {
        "collection": collection,
        "membership": membership,
        "last_organiser": membership.role == Membership.ORGANISER
        and not Membership.objects.filter(collection=collection, role=Membership.ORGANISER)
        .exclude(id=membership.id)
        .exists(),
        "unjudged": unjudged_assigned(user=membership.user, collection=collection),
    }
    return render(request, "annotations/members/remove.html", context)


@login_required
@require_POST
def member_link(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    """A fresh set-password link for a member this collection created who has not set a
    password yet (services.link_refusal says who qualifies)."""
    membership = _membership(request, slug, membership_id)
    try:
        link = _link(request, membership.collection, membership.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("collection-members", slug=slug)
    return _page(request, membership.collection, link=link)
