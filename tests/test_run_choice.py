"""The run options joined in Python are the markup the template loop rendered."""

from django.template import Context, Template

from annotations.templatetags.run_choice import run_options

NAMES = ["bm25", "a&b <x>", "q\"uote's", "bm25+rm3", ""]


def test_run_options_are_the_template_loops_markup_with_the_chosen_run_selected() -> None:
    loop = Template(
        "{% for name in names %}<option{% if name == chosen %} selected{% endif %}>"
        "{{ name }}</option>{% endfor %}"
    )
    for chosen in ["a&b <x>", "bm25", "none of them"]:
        expected = loop.render(Context({"names": NAMES, "chosen": chosen}))
        assert run_options(NAMES, chosen) == expected
    assert run_options(NAMES, "a&b <x>").count(" selected") == 1
    assert "<x>" not in run_options(NAMES, "")
