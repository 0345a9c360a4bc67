"""All runs of a collection as one zip, streamed: each run's TREC file is compressed as it
is read, so neither the archive nor a run is ever held whole."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator

from annotations.models import Collection, Run
from annotations.selectors.exports import run_text

# What a file name in the archive cannot hold as itself (a path separator, a control
# character, what Windows refuses): written as `~XX` (hex), as the API's `~2F` in ids.
_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|~]')


def archive_name(run_name: str) -> str:
    """The run's file name in the archive: `<name>.run`, reversibly escaped."""
    safe = _UNSAFE.sub(lambda found: f"~{ord(found.group()):02X}", run_name)
    if safe.startswith("."):
        safe = "~2E" + safe[1:]
    return f"{safe}.run"


class _Pipe:
    """The archive's output: what ZipFile writes is taken away piece by piece (ZipFile
    writes to a stream it cannot seek with data descriptors after each member)."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.pieces.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        data, self.pieces = b"".join(self.pieces), []
        return data


def runs_zip(*, collection: Collection) -> Iterator[bytes]:
    """The zip of every run of the collection, by name, each as `export_run` writes it."""
    pipe = _Pipe()
    runs = list(Run.objects.filter(collection=collection).order_by("name"))
    with zipfile.ZipFile(pipe, "w", compression=zipfile.ZIP_DEFLATED) as archive:  # type: ignore[call-overload]
        for run in runs:
            info = zipfile.ZipInfo(archive_name(run.name))
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as member:
                for piece in run_text(run=run):
                    member.write(piece.encode())
                    if data := pipe.take():
                        yield data
            if data := pipe.take():
                yield data
    yield pipe.take()
