"""Assessors are blinded unless a collection opens its leaderboard to them; every collection
without a grade scale (one made in the admin before scales were enforced) gets the default."""

from typing import Any

from django.db import migrations, models

# The default 0-3 scale as it stood when this migration was written.
DEFAULT_GRADES = [
    (0, "Not relevant", "The document has nothing useful for the query."),
    (1, "Marginally relevant", "Mentions the topic but would not satisfy the information need."),
    (2, "Highly relevant", "Substantially answers the query; a searcher would be glad to see it."),
    (3, "Perfectly relevant", "Exactly what the query asks for; the best possible answer."),
]


def give_default_scales(apps: Any, schema_editor: Any) -> None:
    Collection = apps.get_model("annotations", "Collection")
    GradeLevel = apps.get_model("annotations", "GradeLevel")
    bare = Collection.objects.filter(grades__isnull=True).values_list("id", flat=True)
    GradeLevel.objects.bulk_create(
        GradeLevel(collection_id=collection_id, value=value, label=label, definition=definition)
        for collection_id in bare
        for value, label, definition in DEFAULT_GRADES
    )


class Migration(migrations.Migration):
    dependencies = [
        ("annotations", "0006_leaderboard_snapshots"),
    ]

    operations = [
        migrations.AddField(
            model_name="collection",
            name="assessors_see_leaderboard",
            field=models.BooleanField(
                default=False,
                help_text="Assessors may read the leaderboard; otherwise they are blinded to "
                "systems and scores (TREC practice).",
            ),
        ),
        # Reversing leaves the scales in place: they are valid data either way.
        migrations.RunPython(give_default_scales, migrations.RunPython.noop),
    ]
