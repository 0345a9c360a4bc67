"""The framework-free metric core: nDCG and its fast twin, significance,
agreement, rank correlation and impact. Nothing here imports Django, DRF or the models."""
