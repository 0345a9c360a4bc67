"""Where import jobs keep their uploads: Django's storage ``uploads`` (``STORAGES``).

By default a directory on this machine (``NDCG_UPLOAD_DIR``); with ``NDCG_UPLOAD_STORAGE``
any Django storage backend (django-storages' S3 backend for AWS, MinIO, Ceph or Cloudflare
R2, or its Azure, Google Cloud and SFTP backends), so that web servers and workers on
different machines share import jobs: the web process stores the upload, whichever worker
runs the job opens it by its name.

A job names its upload by the storage's name for it. Jobs recorded before uploads went
through the storage name an absolute path on the machine that received them; those are
still opened, and deleted, as local files.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.files.move import file_move_safe
from django.core.files.storage import FileSystemStorage, Storage, storages
from django.core.files.uploadedfile import UploadedFile

__all__ = ["UploadDirectory", "upload_delete", "upload_exists", "upload_open", "upload_save"]

logger = logging.getLogger(__name__)


class UploadDirectory(FileSystemStorage):
    """The default uploads storage: the directory NDCG_UPLOAD_DIR (read when used)."""

    @property  # type: ignore[override]
    def base_location(self) -> str:
        return str(settings.NDCG_UPLOAD_DIR)

    @property  # type: ignore[override]
    def location(self) -> str:
        return os.path.abspath(self.base_location)


def _storage() -> Storage:
    return storages["uploads"]


def _local(name: str) -> bool:
    return os.path.isabs(name)


def upload_save(upload: UploadedFile, name: str) -> str:
    """Store `upload` under `name` (a fresh, unique name); returns the name to open it by.

    On a file system storage a large upload (already on disk) is moved, not copied."""
    storage = _storage()
    temporary = getattr(upload, "temporary_file_path", None)
    if isinstance(storage, FileSystemStorage) and temporary is not None:
        target = Path(storage.path(name))
        target.parent.mkdir(parents=True, exist_ok=True)
        file_move_safe(temporary(), str(target))  # a rename within one file system
        upload.close()
        return name
    upload.seek(0)
    return storage.save(name, upload)


def upload_open(name: str) -> IO[bytes]:
    """The stored upload, opened for reading bytes (OSError when it is gone)."""
    if _local(name):
        return open(name, "rb")
    try:
        return _storage().open(name, "rb")
    except OSError:
        raise
    except Exception as error:  # a remote storage's own errors: the upload cannot be read
        raise OSError(f"the upload storage could not open it: {error}") from error


def upload_exists(name: str) -> bool:
    """Whether the stored upload is still there."""
    if not name:
        return False
    if _local(name):
        return Path(name).is_file()
    return _storage().exists(name)


def upload_delete(name: str) -> None:
    """Delete a stored upload its job no longer names (nothing when it is gone already)."""
    if not name:
        return
    if _local(name):
        Path(name).unlink(missing_ok=True)
        return
    try:
        _storage().delete(name)
    except Exception:  # a remote storage unreachable: the file stays, nothing else is wrong
        logger.warning("could not delete the stored upload %s", name, exc_info=True)
