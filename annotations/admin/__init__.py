"""Django admin for organisers, one module per resource; judgement writes go through the
services (history, rescoring). Importing the package registers every model's admin."""

from annotations.admin import accounts, collections, jobs, judgements, pools, runs, scores

__all__ = ["accounts", "collections", "jobs", "judgements", "pools", "runs", "scores"]
