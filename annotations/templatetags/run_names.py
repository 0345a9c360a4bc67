"""Names in table cells, cut with an ellipsis and whole on hover and on keyboard focus."""

from __future__ import annotations

import html

from django import template
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# Names longer than this may be cut by the `.cut` rule of site.css (16-24 rem wide): an
# unlinked one is made focusable, so that a keyboard user can see it whole too.
FOCUSABLE_FROM = 20


def cut_name_markup(name: str, url: str = "") -> str:
    """``name`` as a link to ``url`` (or as text without one) in the class ``cut``: one line,
    cut with an ellipsis by the style sheet; the ``title`` shows it whole on hover, and on
    focus the style sheet wraps it in place (the link is focusable, and so is an unlinked
    name long enough to be cut). The text itself is whole, so screen readers read it all.
    Every value is escaped (``html.escape``, what autoescape applies to a string)."""
    text = html.escape(name)
    if url:
        return f'<a class="cut" href="{html.escape(url)}" title="{text}">{text}</a>'
    focus = ' tabindex="0"' if len(name) > FOCUSABLE_FROM else ""
    return f'<span class="cut" title="{text}"{focus}>{text}</span>'


@register.simple_tag
def cut_name(name: str, *url: object) -> SafeString:
    """``cut_name_markup`` in a template, the link's address joined from the remaining
    arguments: ``{% cut_name run.name run_url "?k=" k %}``; none for an unlinked name."""
    return mark_safe(cut_name_markup(str(name), "".join(map(str, url))))  # escaped there
