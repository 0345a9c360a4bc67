from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotations", "0021_import_job_progress")]

    operations = [
        migrations.AddField(
            model_name="leaderboardsnapshot",
            name="query_ids",
            field=models.JSONField(
                default=list, help_text="The query ids of the per-query matrix's columns"
            ),
        ),
        migrations.AddField(
            model_name="leaderboardsnapshot",
            name="per_query",
            field=models.BinaryField(
                default=b"",
                help_text="nDCG@k per run (rows, rank order) and query (columns), float64",
            ),
        ),
        migrations.AddField(
            model_name="leaderboardsnapshot",
            name="significance",
            field=models.JSONField(
                default=dict, help_text="The HSD pass: its stamp, settings and letters per run"
            ),
        ),
        migrations.AddField(
            model_name="leaderboardsnapshot",
            name="pairs",
            field=models.BinaryField(
                default=b"",
                help_text="HSD-adjusted p-values, runs x runs in the pass's order, float64",
            ),
        ),
    ]
