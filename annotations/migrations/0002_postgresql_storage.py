"""PostgreSQL storage settings for the hot tables.

Packed rankings are stored uncompressed: they barely compress, and every judgement reads a
query's rankings of every run. The score tables leave room on each page so that rewriting
a score is an in-place (HOT) update that touches no index.
"""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

COLUMNS = ("documents", "scores", "ranks")


def storage(mode: str):  # type: ignore[no-untyped-def]
    def apply(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        for column in COLUMNS:
            schema_editor.execute(
                f"ALTER TABLE annotations_ranking ALTER COLUMN {column} SET STORAGE {mode}"
            )

    return apply


def fillfactor(value: int):  # type: ignore[no-untyped-def]
    def apply(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        for table in SCORE_TABLES:
            schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {value})")

    return apply


SCORE_TABLES = ("annotations_queryscore", "annotations_runscore", "annotations_idealscore")


class Migration(migrations.Migration):
    dependencies = [("annotations", "0001_initial")]

    operations = [
        migrations.RunPython(storage("EXTERNAL"), storage("EXTENDED")),
        migrations.RunPython(fillfactor(70), fillfactor(100)),
    ]
