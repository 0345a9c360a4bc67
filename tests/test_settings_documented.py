"""The environment variables the platform reads are few, each in the README's table, and
every `NDCG_*` name the docs, the Makefile or the benchmarks use is one the code reads."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from ndcg_platform import settings as project_settings

ROOT = Path(__file__).resolve().parent.parent
CODE = [ROOT / "ndcg_platform", ROOT / "annotations"]
NAME = re.compile(r"NDCG_[A-Z0-9_]+")
# A family of variables the operator names (a judge's key): documented as one row.
# Families of variables read by a prefix: machine judges' keys and search systems' secrets.
FAMILIES = ("NDCG_JUDGE_KEY_", "NDCG_SEARCH_KEY_")
FAMILY = FAMILIES[0]
# Where a variable is set or explained for users and operators (the decision records and
# the changelog are history, and may name variables that are gone).
MENTIONS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "Makefile",
    ROOT / "Procfile",
    *sorted((ROOT / "deploy").rglob("*.*")),
    *sorted((ROOT / "benchmarks").glob("*.py")),
    *sorted((ROOT / "benchmarks").glob("*.md")),
]


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for folder in CODE:
        for path in sorted(folder.rglob("*.py")):
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def _variable(name: str) -> str:
    family = next((prefix for prefix in FAMILIES if name.startswith(prefix)), None)
    return f"{family}<NAME>" if family else name


def read_in_code() -> set[str]:
    """The variables the code names as strings: what it reads from the environment (the
    settings' `env_*` helpers, `os.environ`, a judge's key by its prefix)."""
    return {
        _variable(node.value)
        for _, module in _modules()
        for node in ast.walk(module)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and NAME.fullmatch(node.value)
    }


def documented() -> set[str]:
    """The `NDCG_*` variables in the first column of the README's Configuration table."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {
        _variable(name)
        for row in rows
        for name in re.findall(r"`(NDCG_[A-Z0-9_]+)(?:<NAME>)?`", row.split("|")[1])
    }


def test_fewer_than_twenty_variables_and_each_in_the_readmes_table() -> None:
    variables = read_in_code()
    assert {"NDCG_MAX_UPLOAD_MB", f"{FAMILY}<NAME>"} <= variables  # the scan finds them
    assert len(variables) < 20, sorted(variables)
    assert variables - documented() == set(), "read in code, missing from the README's table"
    assert documented() - variables == set(), "in the README's table, read by no code"


def test_every_variable_the_docs_and_tools_name_is_read_by_the_code() -> None:
    variables = read_in_code()
    named = {
        (str(path.relative_to(ROOT)), _variable(name))
        for path in MENTIONS
        for name in NAME.findall(path.read_text(encoding="utf-8"))
    }
    assert {(where, name) for where, name in named if name not in variables} == set()


def test_every_setting_the_code_reads_has_its_one_default_in_settings_py() -> None:
    """`settings.NDCG_X` is defined in ndcg_platform/settings.py, and no code reads one with
    a default of its own (`getattr(settings, "NDCG_X", default)`)."""
    undefined, defaulted = set(), set()
    for path, module in _modules():
        for node in ast.walk(module):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "settings"
                and node.attr.startswith("NDCG_")
                and not hasattr(project_settings, node.attr)
            ):
                undefined.add((path.name, node.attr))
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) == 3
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id == "settings"
            ):
                defaulted.add((path.name, ast.unparse(node.args[1])))
    assert undefined == set()
    assert defaulted == set()
