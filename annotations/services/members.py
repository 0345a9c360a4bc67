"""Members of a collection: add users, create accounts with a set-password link, roles."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, User
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from annotations.models import AccountAudit, AccountOrigin, Collection, Membership
from annotations.selectors.judging import grading_members

ROLES = {role for role, _ in Membership.ROLE_CHOICES}


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValidationError({"role": f"{role!r} is not a role"})


# One answer for every user who cannot be added, so that the members page does not tell
# whether an account exists or has a password.
NOT_ADDABLE = (
    "{username!r} cannot be added: ask the person for the username they log in with, or "
    "create a new account below."
)
USERNAME_TAKEN = "This username is taken: choose another, or add the person's own account above."
LINK_REFUSED = (
    "A set-password link is issued only for an account this collection created that has not "
    "set a password and holds no role elsewhere; staff can help with any other account."
)
# One answer for every name that is not an organiser or assessor of the collection: another
# collection's account, a system account, staff, or no account at all. Whoever names someone
# (to assign work, hand it over or import judgements) learns nothing about accounts outside
# the collection, and only the members page makes anyone a member.
NOT_A_MEMBER = (
    "{who} is not an assessor or organiser of this collection: add them on the Members page "
    "({page}) or with POST {api} first."
)


def audit(
    *,
    action: str,
    actor: User | None,
    target: User,
    collection: Collection,
    detail: str = "",
) -> AccountAudit:
    """Record what an organiser did to an account (staff read the trail in the admin)."""
    return AccountAudit.objects.create(
        action=action,
        actor=actor,
        actor_name=actor.get_username() if actor is not None else "",
        target=target,
        target_name=target.get_username(),
        collection=collection,
        collection_slug=collection.slug,
        detail=detail[:200],
    )


def _is_system(user: AbstractBaseUser) -> bool:
    return AccountOrigin.objects.filter(user_id=user.pk, system=True).exists()


def _addable(user: AbstractBaseUser | None) -> bool:
    """Only an account somebody logs in with can be added: never one without a usable
    password (its set-password link belongs to the collection that made it) nor a system
    account."""
    return (
        user is not None and user.is_active and user.has_usable_password() and not _is_system(user)
    )


def membership_add(
    *, collection: Collection, username: str, role: str, actor: User | None = None
) -> Membership:
    """Give an existing user a role in the collection (a second role is a second row)."""
    _check_role(role)
    user = get_user_model().objects.filter(username=username).first()
    if not _addable(user):
        raise ValidationError({"username": NOT_ADDABLE.format(username=username)})
    assert user is not None
    with transaction.atomic():
        held = Membership.objects.filter(collection=collection, user=user, role=role).exists()
        membership = membership_grant(collection=collection, user=user, role=role)
        if held:
            raise ValidationError(
                {"username": f"{user.get_username()} already has this role in {collection.slug}."}
            )
        audit(
            action=AccountAudit.ADDED, actor=actor, target=user, collection=collection, detail=role
        )
    return membership


def membership_grant(*, collection: Collection, user: AbstractBaseUser, role: str) -> Membership:
    """Give a user a role in a collection, keeping the role if it is held (idempotent): the
    write under `membership_add` (which checks who may be added first) and the role a
    collection's creator gets."""
    _check_role(role)
    membership, _ = Membership.objects.get_or_create(collection=collection, user=user, role=role)
    return membership


def not_a_member(*, collection: Collection, username: str | None = None) -> str:
    """`NOT_A_MEMBER` for `username` (None: a form's choice, posted as an id), naming the
    collection's members page and endpoint."""
    return NOT_A_MEMBER.format(
        who="The account chosen" if username is None else repr(username),
        page=reverse("collection-members", args=[collection.slug]),
        api=reverse("api:members", kwargs={"slug": collection.slug}),
    )


def grading_members_named(
    *, collection: Collection, usernames: Sequence[str], field: str
) -> list[User]:
    """The collection's organisers and assessors of these usernames, in their order (each
    once); any other name is refused under `field` with `NOT_A_MEMBER`, whether an account
    has it or not."""
    wanted = list(dict.fromkeys(usernames))
    found = {
        user.get_username(): user
        for user in grading_members(collection=collection).filter(username__in=wanted)
    }
    outside = [name for name in wanted if name not in found]
    if outside:
        raise ValidationError(
            {field: [not_a_member(collection=collection, username=name) for name in outside]}
        )
    return [found[name] for name in wanted]


def grading_members_check(
    *, collection: Collection, users: Sequence[AbstractBaseUser], field: str
) -> None:
    """Refuse, as `grading_members_named` does, any of `users` who is not an organiser or
    assessor of the collection: the services' own check on accounts resolved elsewhere."""
    inside = set(
        grading_members(collection=collection)
        .filter(pk__in=[user.pk for user in users])
        .values_list("pk", flat=True)
    )
    outside = [user.get_username() for user in users if user.pk not in inside]
    if outside:
        raise ValidationError(
            {field: [not_a_member(collection=collection, username=name) for name in outside]}
        )


def account_create(
    *,
    collection: Collection,
    username: str,
    email: str = "",
    role: str,
    actor: User | None = None,
) -> AbstractBaseUser:
    """Create an account without a password (it is set through a one-time link) and make it
    a member with `role`, in one transaction; the account belongs to this collection. A
    username taken in any letter case is refused (two accounts "Ann" and "ann" would be
    confused on every page)."""
    _check_role(role)
    model = get_user_model()
    if model.objects.filter(username__iexact=username).exists():
        raise ValidationError({"username": USERNAME_TAKEN})
    user = model(username=username, email=email)
    user.set_unusable_password()
    user.full_clean(exclude=["password"])
    with transaction.atomic():
        user.save()
        Membership.objects.create(collection=collection, user=user, role=role)
        AccountOrigin.objects.create(user=user, collection=collection, created_by=actor)
        audit(
            action=AccountAudit.CREATED,
            actor=actor,
            target=user,
            collection=collection,
            detail=role,
        )
    return user


def system_account(username: str) -> AbstractBaseUser:
    """A non-login account the platform acts under (the import account): created without a
    password and marked so that no members page ever gives it a link or a role."""
    user, created = get_user_model().objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save()
        AccountOrigin.objects.get_or_create(user=user, defaults={"system": True})
    return user


def link_refusal(*, user: User, collection: Collection, actor: User | None) -> str | None:
    """Why no set-password link may be issued for `user` from `collection`'s members page
    (None: it may). The one rule for the page, its table and any other door."""
    if user.has_usable_password():
        return f"{user.get_username()} has set a password; they can change it themselves."
    if getattr(user, "is_staff", False) or getattr(user, "is_superuser", False):
        return f"{user.get_username()} is staff: set its password in the admin."
    origin = AccountOrigin.objects.filter(user_id=user.pk).first()
    if origin is not None and origin.system:
        return f"{user.get_username()} is a system account: nobody logs in with it."
    if actor is not None and getattr(actor, "is_staff", False):
        return None
    if origin is None or origin.collection_id != collection.id:
        return LINK_REFUSED
    if Membership.objects.filter(user_id=user.pk).exclude(collection_id=collection.id).exists():
        return LINK_REFUSED
    return None


def link_candidates(*, collection: Collection, actor: User | None) -> set[int]:
    """The ids of the collection's members for whom a link may be issued (the table's
    buttons), by `link_refusal`'s rule in three queries."""
    members = get_user_model().objects.filter(memberships__collection=collection).distinct()
    candidates = {
        user.pk: user
        for user in members
        if not user.has_usable_password() and not user.is_staff and not user.is_superuser
    }
    if not candidates:
        return set()
    origins = dict(
        AccountOrigin.objects.filter(user_id__in=candidates).values_list("user_id", "collection_id")
    )
    systems = set(
        AccountOrigin.objects.filter(user_id__in=candidates, system=True).values_list(
            "user_id", flat=True
        )
    )
    if actor is not None and getattr(actor, "is_staff", False):
        return set(candidates) - systems
    elsewhere = set(
        Membership.objects.filter(user_id__in=candidates)
        .exclude(collection_id=collection.id)
        .values_list("user_id", flat=True)
    )
    return {
        pk
        for pk in candidates
        if origins.get(pk) == collection.id and pk not in elsewhere and pk not in systems
    }


def _organisers_left(collection: Collection, leaving: Membership) -> int:
    """Organiser memberships once `leaving` is gone; the collection row is locked first, so two
    concurrent removals cannot both see another organiser left."""
    Collection.objects.select_for_update().filter(id=collection.id).first()
    return (
        Membership.objects.filter(collection=collection, role=Membership.ORGANISER)
        .exclude(id=leaving.id)
        .count()
    )


def membership_change_role(
    *, membership: Membership, role: str, actor: User | None = None
) -> Membership:
    """Change a member's role; the last organiser stays one. A role the user already holds
    merges the two rows."""
    _check_role(role)
    with transaction.atomic():
        locked = Membership.objects.select_for_update().get(id=membership.id)
        if role == locked.role:
            return locked
        if locked.role == Membership.ORGANISER and not _organisers_left(locked.collection, locked):
            raise ValidationError({"role": "The collection's last organiser stays an organiser."})
        audit(
            action=AccountAudit.ROLE,
            actor=actor,
            target=locked.user,
            collection=locked.collection,
            detail=f"{locked.role} -> {role}",
        )
        twin = Membership.objects.filter(
            collection_id=locked.collection_id, user_id=locked.user_id, role=role
        ).first()
        if twin is not None:
            locked.delete()
            return twin
        locked.role = role
        locked.save(update_fields=["role"])
        return locked


def membership_remove(*, membership: Membership, actor: User | None = None) -> None:
    """Remove a member's role; the last organiser cannot be removed."""
    with transaction.atomic():
        locked = Membership.objects.select_for_update().filter(id=membership.id).first()
        if locked is None:
            return
        if locked.role == Membership.ORGANISER and not _organisers_left(locked.collection, locked):
            raise ValidationError("The collection's last organiser cannot be removed.")
        audit(
            action=AccountAudit.REMOVED,
            actor=actor,
            target=locked.user,
            collection=locked.collection,
            detail=locked.role,
        )
        locked.delete()


def account_password_link(*, user: User, collection: Collection, actor: User | None) -> str:
    """The path of a one-time set-password page for an account that has no password yet,
    issued from `collection`'s members page by `actor` (refused by `link_refusal`'s rule);
    every issued link is audited.

    Django's password-reset token: it stops working once the password is set (the token
    covers the password hash) or after PASSWORD_RESET_TIMEOUT.
    """
    refusal = link_refusal(user=user, collection=collection, actor=actor)
    if refusal is not None:
        raise ValidationError(refusal)
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    audit(action=AccountAudit.LINK, actor=actor, target=user, collection=collection)
    return reverse("password_reset_confirm", kwargs={"uidb64": uid, "token": token})


def account_password_link_send(*, user: AbstractBaseUser, url: str, collection: Collection) -> bool:
    """Mail the set-password link when mail is configured (DJANGO_EMAIL_HOST) and the
    account has an address."""
    address = getattr(user, "email", "")
    if not settings.EMAIL_HOST or not address:
        return False
    send_mail(
        subject=f"Your account for {collection.name}",
        message=f"An account {user.get_username()} was created for you in {collection.name}.\n"
        f"Set your password here (the link works once): {url}\n",
        from_email=None,
        recipient_list=[address],
    )
    return True
