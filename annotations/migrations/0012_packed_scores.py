"""Per-query scores and run means packed: one row per (run, query) and one per run.

A judgement used to rewrite runs x cutoffs rows of each table; packed, it rewrites one row
per run. Stored scores are derived data: the migration drops the per-cutoff rows and marks
every run unscored, and the next sweep (the worker's beat, the first read in inline mode, or
`manage.py rescore`) rebuilds them from the judgements.
"""

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

# How PostgreSQL stores the packed columns. A per-query row (four measures of 8 bytes per
# cutoff, 3.2 kB at 100 cutoffs) stays inside its page, uncompressed (MAIN, and no toasting
# below a page's size): a judgement reads and rewrites one row per run, and a TOAST lookup
# per column would cost more than the row. A run's sums (2 kB per measure at 100 cutoffs)
# live out of line, uncompressed (EXTERNAL): a judgement that moves two of the three
# measures rewrites those two, and the third keeps its stored value.
STORAGE = {
    "annotations_queryscore": ("MAIN", ("ndcg", "dcg", "judged", "ndcg_condensed")),
    "annotations_runscore": ("EXTERNAL", ("ndcg_sums", "ndcg_condensed_sums", "judged_sums")),
}
INLINE_TABLES = ("annotations_queryscore",)


def clear_scores(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    apps.get_model("annotations", "QueryScore").objects.all().delete()
    apps.get_model("annotations", "RunScore").objects.all().delete()
    apps.get_model("annotations", "LeaderboardSnapshot").objects.all().delete()
    apps.get_model("annotations", "Run").objects.update(scored_at=None)


def packed_storage(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, (mode, columns) in STORAGE.items():
        for column in columns:
            schema_editor.execute(f'ALTER TABLE {table} ALTER COLUMN "{column}" SET STORAGE {mode}')
    for table in INLINE_TABLES:
        schema_editor.execute(f"ALTER TABLE {table} SET (toast_tuple_target = 8160)")


class Migration(migrations.Migration):
    dependencies = [("annotations", "0011_impact")]

    operations = [
        migrations.RunPython(clear_scores, clear_scores),
        migrations.RemoveConstraint(model_name="queryscore", name="query_score_unique"),
        migrations.RemoveIndex(model_name="queryscore", name="query_score_run_idx"),
        migrations.RemoveConstraint(model_name="runscore", name="run_score_unique"),
        migrations.RemoveField(model_name="queryscore", name="k"),
        migrations.RemoveField(model_name="queryscore", name="ndcg"),
        migrations.RemoveField(model_name="queryscore", name="dcg"),
        migrations.RemoveField(model_name="queryscore", name="judged"),
        migrations.RemoveField(model_name="queryscore", name="ndcg_condensed"),
        migrations.RemoveField(model_name="runscore", name="k"),
        migrations.RemoveField(model_name="runscore", name="ndcg"),
        migrations.RemoveField(model_name="runscore", name="ndcg_condensed"),
        migrations.RemoveField(model_name="runscore", name="judged"),
        migrations.RemoveField(model_name="runscore", name="ndcg_sum"),
        migrations.RemoveField(model_name="runscore", name="ndcg_condensed_sum"),
        migrations.RemoveField(model_name="runscore", name="judged_sum"),
        migrations.AddField(
            model_name="queryscore",
            name="cutoffs",
            field=models.TextField(
                default="", help_text="The cutoffs k of the packed values, e.g. 5,10,20"
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="queryscore",
            name="ndcg",
            field=models.BinaryField(
                default=b"", help_text="nDCG@k per cutoff (float64, little-endian)"
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="queryscore",
            name="dcg",
            field=models.BinaryField(
                default=b"", help_text="DCG@k per cutoff (float64, little-endian)"
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="queryscore",
            name="judged",
            field=models.BinaryField(
                default=b"", help_text="judged@k per cutoff (float64, little-endian)"
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="queryscore",
            name="ndcg_condensed",
            field=models.BinaryField(
                default=b"", help_text="nDCG'@k per cutoff (float64, little-endian)"
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="runscore",
            name="cutoffs",
            field=models.TextField(
                default="", help_text="The cutoffs k of the packed means, e.g. 5,10,20"
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="runscore",
            name="ndcg_sums",
            field=models.BinaryField(
                default=b"", help_text="Exact sums of nDCG@k per cutoff (32-bit limbs)"
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="runscore",
            name="ndcg_condensed_sums",
            field=models.BinaryField(
                default=b"", help_text="Exact sums of nDCG'@k per cutoff (32-bit limbs)"
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="runscore",
            name="judged_sums",
            field=models.BinaryField(
                default=b"", help_text="Exact sums of judged@k per cutoff (32-bit limbs)"
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="runscore",
            name="overflow",
            field=models.JSONField(
                default=dict,
                help_text="Exact sums that do not fit the limbs: 'measure:position' -> text",
            ),
        ),
        migrations.AlterModelOptions(name="queryscore", options={"ordering": ["run_id", "query_id"]}),
        migrations.AlterModelOptions(name="runscore", options={"ordering": ["run_id"]}),
        migrations.AddConstraint(
            model_name="queryscore",
            constraint=models.UniqueConstraint(fields=("query", "run"), name="query_score_unique"),
        ),
        migrations.AddIndex(
            model_name="queryscore",
            index=models.Index(fields=["run"], name="query_score_run_idx"),
        ),
        migrations.AddConstraint(
            model_name="runscore",
            constraint=models.UniqueConstraint(fields=("run",), name="run_score_unique"),
        ),
        migrations.RunPython(packed_storage, migrations.RunPython.noop),
    ]
