"""Half-empty pages for the per-query and per-run score tables.

A judgement that moves a query's ideal DCG rewrites every (run, k) score of that query and
every run mean of the collection. Those rows sit together on a few pages; an in-place (HOT)
update needs room for the new version on the same page, and only pages at least half empty
hold a full rewrite of their rows. With less room most of the rewrite becomes ordinary
updates that also write every index.
"""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

TABLES = ("annotations_queryscore", "annotations_runscore")


def fillfactor(value: int):  # type: ignore[no-untyped-def]
    def apply(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        for table in TABLES:
            schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {value})")

    return apply


class Migration(migrations.Migration):
    dependencies = [("annotations", "0002_postgresql_storage")]

    operations = [migrations.RunPython(fillfactor(45), fillfactor(70))]
