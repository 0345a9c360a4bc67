"""Login lockouts (django-axes) that hold against guessing and do not lock everybody out.

Failures are counted per (username, address) and per username across addresses, never per
address alone: failed logins with made-up usernames lock out only those names, and one office
behind one address is not locked out by one person's typos. A success clears only the
failures of its own (username, address) pair, so logging into one's own account between
guesses does not reset the count of another account. An attempt refused during a lockout is
not a failure (settings: AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT), and one address
counts towards an account's total with at most NDCG_LOGIN_FAILURES failures, so that no one
address can lock a person out of the other addresses.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_failure_limit
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse

log = logging.getLogger("annotations.security")

# An account is refused from every address once its failures reach NDCG_LOGIN_FAILURES from
# this many addresses: more than one, so that no single address can lock a person out of
# the others; few, so that guessing from many addresses still meets the lock soon.
ACCOUNT_ADDRESSES = 4


class LockoutHandler(AxesDatabaseHandler):
    """Locks a (username, address) pair after NDCG_LOGIN_FAILURES failures within the
    cool-off, and a username from every address after that many from each of
    ACCOUNT_ADDRESSES addresses."""

    def get_failures(self, request: HttpRequest, credentials: dict | None = None) -> int:
        # AXES_LOCKOUT_PARAMETERS is [["username", "ip_address"], "username"]: pair, account
        pair_attempts, account_attempts = self.get_user_attempts(request, credentials)
        pair = pair_attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0
        limit = get_failure_limit(request, credentials)
        # Capped per address: requests racing past the pair's check before its lockout was
        # recorded still give one address no more than the pair's limit in the total.
        account = sum(
            min(total or 0, limit)
            for total in account_attempts.values("ip_address")
            .annotate(total=Sum("failures_since_start"))
            .values_list("total", flat=True)
        )
        if account >= ACCOUNT_ADDRESSES * limit:
            # the account is locked from everywhere: report the pair's limit as reached
            return max(int(pair), limit)
        return int(pair)

    def reset_user_attempts(self, request: HttpRequest, credentials: dict | None = None) -> int:
        pair = self.filter_user_attempts(request, credentials)[0]
        count, _ = pair.delete()
        return int(count)


class ProxyCountWarningMiddleware:
    """Warns once per process when requests arrive through a proxy (they carry
    X-Forwarded-For) while NDCG_PROXY_COUNT is 0: every client then has the proxy's address,
    and lockouts and throttles count them as one."""

    warned = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if (
            not ProxyCountWarningMiddleware.warned
            and settings.AXES_IPWARE_PROXY_COUNT == 0
            and "HTTP_X_FORWARDED_FOR" in request.META
        ):
            ProxyCountWarningMiddleware.warned = True
            log.warning(
                "Requests carry X-Forwarded-For but NDCG_PROXY_COUNT is 0: every client is "
                "seen with the proxy's address %s. Set NDCG_PROXY_COUNT to the number of "
                "proxies in front of the server (see docs/operations.md).",
                request.META.get("REMOTE_ADDR", "?"),
            )
        return self.get_response(request)
