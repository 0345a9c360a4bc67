"""Run sums in 12 bytes a value, inside the row.

The exact sums of the run means were five 32-bit limbs (20 bytes) a value, stored out of
line: at 100 cutoffs a judgement rewrote two TOAST values of 2 kB per run. A sum is now a
signed 96-bit integer in units of 2**-72 (`score_bytes.pack_sums`), and a run's row (3.6 kB
at 100 cutoffs) stays inside its page, uncompressed, where an update fits beside it. The
stored sums are converted, not recomputed: each keeps its exact value, and the few that
12 bytes cannot hold move to the overflow texts, where they stay exact.
"""

import numpy as np
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from annotations.formats import score_bytes
from annotations.metrics import exact, exact_arrays

SUMS = ("ndcg_sums", "ndcg_condensed_sums", "judged_sums")
_OLD_LIMB = np.dtype("<i4")


def _old_sums(data: bytes, cutoffs: int) -> np.ndarray:
    """The (cutoffs, 5) limbs of the 20-byte form (limbs 0..3 unsigned, limb 4 signed)."""
    values = np.frombuffer(bytes(data), dtype=_OLD_LIMB).astype(np.int64)
    if values.size != cutoffs * exact_arrays.LIMBS:
        raise ValueError(f"{values.size} packed limbs for {cutoffs} cutoffs")
    sums = values.reshape(cutoffs, exact_arrays.LIMBS)
    sums[:, :-1] &= 0xFFFFFFFF
    return sums


def to_12_bytes(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    RunScore = apps.get_model("annotations", "RunScore")
    for row in RunScore.objects.all().iterator(chunk_size=500):
        cutoffs = len(row.cutoffs.split(","))
        overflow = dict(row.overflow or {})
        for measure, name in enumerate(SUMS):
            sums = _old_sums(getattr(row, name), cutoffs)
            for index in np.flatnonzero(~score_bytes.packable(sums)):
                # Kept exactly as text, as a sum off the grid is; its limbs hold zero.
                key = score_bytes.overflow_key(measure, int(index))
                overflow[key] = exact.total_to_text(exact_arrays.to_total(sums[index]))
                sums[index] = 0
            setattr(row, name, score_bytes.pack_sums(sums))
        RunScore.objects.filter(pk=row.pk).update(
            overflow=overflow, **{name: getattr(row, name) for name in SUMS}
        )


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
