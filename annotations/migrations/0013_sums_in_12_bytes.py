"""Run sums in 12 bytes a value, inside the row.

The exact sums of the run means were five 32-bit limbs (20 bytes) a value, stored out of
line: at 100 cutoffs a judgement rewrote two TOAST values of 2 kB per run. A sum is now a
signed 96-bit integer in units of 2**-72 (`score_bytes.pack_sums`), and a run's row (3.6 kB
at 100 cutoffs) stays inside its page, uncompressed, where an update fits beside it. The
stored sums were converted, not recomputed; 0019 drops them, so the conversion is now a
no-op.
"""

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

SUMS = ("ndcg_sums", "ndcg_condensed_sums", "judged_sums")


def to_12_bytes(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Converted the stored sums to 12 bytes; a no-op since 0019 drops the sums (the run
    means are computed from the per-query values), so the conversion code is gone."""


def inline_storage(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for column in SUMS:
        schema_editor.execute(
            f'ALTER TABLE annotations_runscore ALTER COLUMN "{column}" SET STORAGE MAIN'
        )
    schema_editor.execute("ALTER TABLE annotations_runscore SET (toast_tuple_target = 8160)")


class Migration(migrations.Migration):
    dependencies = [("annotations", "0012_packed_scores")]

    # The storage first, so that the converted rows are written inside their pages.
    operations = [
        migrations.RunPython(inline_storage, migrations.RunPython.noop),
        migrations.RunPython(to_12_bytes),
        migrations.AlterField(
            model_name="runscore",
            name="ndcg_sums",
            field=models.BinaryField(help_text="Exact sums of nDCG@k per cutoff (12 bytes each)"),
        ),
        migrations.AlterField(
            model_name="runscore",
            name="ndcg_condensed_sums",
            field=models.BinaryField(help_text="Exact sums of nDCG'@k per cutoff (12 bytes each)"),
        ),
        migrations.AlterField(
            model_name="runscore",
            name="judged_sums",
            field=models.BinaryField(help_text="Exact sums of judged@k per cutoff (12 bytes each)"),
        ),
        migrations.AlterField(
            model_name="runscore",
            name="overflow",
            field=models.JSONField(
                default=dict,
                help_text="Exact sums that do not fit 12 bytes: 'measure:position' -> text",
            ),
        ),
    ]
