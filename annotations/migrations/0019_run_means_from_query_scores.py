"""Run means computed from the stored per-query values: the exact sums go.

Every reader computes a run's means from its per-query values in trec_eval's order (the
`all` line bit for bit), so RunScore keeps only the run's layout and when its scores last
moved; the query count is that of the values read.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotations", "0018_history_source_undo")]

    operations = [
        migrations.RemoveField(model_name="runscore", name="queries"),
        migrations.RemoveField(model_name="runscore", name="ndcg_sums"),
        migrations.RemoveField(model_name="runscore", name="ndcg_condensed_sums"),
        migrations.RemoveField(model_name="runscore", name="judged_sums"),
        migrations.RemoveField(model_name="runscore", name="overflow"),
        migrations.AlterField(
            model_name="runscore",
            name="cutoffs",
            field=models.TextField(help_text="The cutoffs k of the run's scores, e.g. 5,10,20"),
        ),
    ]
