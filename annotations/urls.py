"""HTML pages of the app."""

from django.urls import path

from annotations import views

urlpatterns = [
    path("", views.home, name="home"),
    path("collections/<slug:slug>/", views.collection_detail, name="collection-detail"),
]
