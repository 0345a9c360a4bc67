"""Members of a collection: add users, create accounts with a set-password link, roles."""

from __future__ import annotations

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

from annotations.models import Collection, Membership

ROLES = {role for role, _ in Membership.ROLE_CHOICES}


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValidationError({"role": f"{role!r} is not a role"})


def membership_add(*, collection: Collection, user: User, role: str) -> Membership:
    """Give an existing user a role in the collection (a second role is a second row)."""
    _check_role(role)
    if Membership.objects.filter(collection=collection, user=user, role=role).exists():
        raise ValidationError(
            {"username": f"{user.get_username()} already has this role in {collection.slug}."}
        )
    return Membership.objects.create(collection=collection, user=user, role=role)


def account_create(
    *, collection: Collection, username: str, email: str = "", role: str
) -> AbstractBaseUser:
    """Create an account without a password (it is set through a one-time link) and make it
    a member with `role`, in one transaction."""
    _check_role(role)
    model = get_user_model()
    user = model(username=username, email=email)
    user.set_unusable_password()
    user.full_clean(exclude=["password"])
    with transaction.atomic():
        user.save()
        Membership.objects.create(collection=collection, user=user, role=role)
    return user


def _organisers_left(collection: Collection, leaving: Membership) -> int:
    """Organiser memberships once `leaving` is gone; the collection row is locked first, so two
    concurrent removals cannot both see another organiser left."""
    Collection.objects.select_for_update().filter(id=collection.id).first()
    return (
        Membership.objects.filter(collection=collection, role=Membership.ORGANISER)
        .exclude(id=leaving.id)
        .count()
    )


def membership_change_role(*, membership: Membership, role: str) -> Membership:
    """Change a member's role; the last organiser stays one. A role the user already holds
    merges the two rows."""
    _check_role(role)
    with transaction.atomic():
        locked = Membership.objects.select_for_update().get(id=membership.id)
        if role == locked.role:
            return locked
        if locked.role == Membership.ORGANISER and not _organisers_left(locked.collection, locked):
            raise ValidationError({"role": "The collection's last organiser stays an organiser."})
        twin = Membership.objects.filter(
            collection_id=locked.collection_id, user_id=locked.user_id, role=role
        ).first()
        if twin is not None:
            locked.delete()
            return twin
        locked.role = role
        locked.save(update_fields=["role"])
        return locked


def membership_remove(*, membership: Membership) -> None:
    """Remove a member's role; the last organiser cannot be removed."""
    with transaction.atomic():
        locked = Membership.objects.select_for_update().filter(id=membership.id).first()
        if locked is None:
            return
        if locked.role == Membership.ORGANISER and not _organisers_left(locked.collection, locked):
            raise ValidationError("The collection's last organiser cannot be removed.")
        locked.delete()


def account_password_link(*, user: AbstractBaseUser) -> str:
    """The path of a one-time set-password page for an account that has no password yet.

    Django's password-reset token: it stops working once the password is set (the token
    covers the password hash) or after PASSWORD_RESET_TIMEOUT.
    """
    if user.has_usable_password():
        raise ValidationError(
            f"{user.get_username()} has set a password; they can change it themselves."
        )
    if getattr(user, "is_staff", False):  # an organiser must not take over a staff account
        raise ValidationError(f"{user.get_username()} is staff: set its password in the admin.")
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    return reverse("password_reset_confirm", kwargs={"uidb64": uid, "token": token})


def account_password_link_send(*, user: AbstractBaseUser, url: str, collection: Collection) -> bool:
    """Mail the set-password link when mail is configured and the account has an address."""
    address = getattr(user, "email", "")
    if not settings.NDCG_SEND_MAIL or not address:
        return False
    send_mail(
        subject=f"Your account for {collection.name}",
        message=f"An account {user.get_username()} was created for you in {collection.name}.\n"
        f"Set your password here (the link works once): {url}\n",
        from_email=None,
        recipient_list=[address],
    )
    return True
