"""HTML pages of the app."""

from django.urls import path

from annotations.views import collections

urlpatterns = [
    path("", collections.home, name="home"),
    path("collections/<slug:slug>/", collections.collection_detail, name="collection-detail"),
]
