"""WSGI: a chunked request body under /api/ read to its end and handed to Django with its length."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from django.conf import settings

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
Application = Callable[[Environ, StartResponse], Iterable[bytes]]
_READ_BYTES = 1024 * 1024


def _chunked_api_body(environ: Environ) -> bool:
    # The server has decoded the chunks and ends the stream at the body's end
    # (wsgi.input_terminated, as gunicorn does); without that the stream cannot be read to
    # its end safely, and a request with a Content-Length is Django's as always.
    return (
        bool(environ.get("wsgi.input_terminated"))
        and not environ.get("CONTENT_LENGTH")
        and bool(environ.get("HTTP_TRANSFER_ENCODING"))
        and str(environ.get("PATH_INFO", "")).startswith("/api/")
    )


class ChunkedApiBodies:
    """Django reads a request body only as far as its Content-Length, and a chunked one has
    none: an upload sent in chunks arrived as no file at all (a 400, "No file was
    submitted."). Under /api/ such a body is read to its end into a temporary file and handed
    on with its length, so every limit Django and the views set on a declared length holds;
    one over NDCG_MAX_UPLOAD_MB is refused at once with 413 in the API's error shape."""

    def __init__(self, application: Application) -> None:
        self.application = application

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        if not _chunked_api_body(environ):
            return self.application(environ, start_response)
        limit = int(settings.NDCG_MAX_UPLOAD_MB) * 1024 * 1024
        # Closed once the answer is (_Closing), after the view has read it.
        body = tempfile.SpooledTemporaryFile(  # noqa: SIM115
            max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE, dir=settings.FILE_UPLOAD_TEMP_DIR
        )
        size = 0
        source = environ["wsgi.input"]
        while size <= limit:
            chunk = source.read(min(_READ_BYTES, limit + 1 - size))
            if not chunk:
                break
            body.write(chunk)
            size += len(chunk)
        if size > limit:
            body.close()
            return _too_large(start_response)
        body.seek(0)
        environ["wsgi.input"] = body
        environ["CONTENT_LENGTH"] = str(size)
        return _Closing(self.application(environ, start_response), body)


def _too_large(start_response: StartResponse) -> list[bytes]:
    # Imported here: this module is loaded before Django is set up (ndcg_platform/wsgi.py).
    from annotations.api_errors import UploadTooLarge, error_response

    response = error_response(
        413,
        str(UploadTooLarge.default_code),
        f"The upload exceeds {settings.NDCG_MAX_UPLOAD_MB} MB.",  # as for a declared length
    )
    start_response(f"413 {response.reason_phrase}", list(response.items()))
    return [response.content]


class _Closing:
    """The application's answer, closing the request's body file after its own close."""

    def __init__(self, answer: Iterable[bytes], body: IO[bytes]) -> None:
        self.answer = answer
        self.body = body

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.answer)

    def close(self) -> None:
        try:
            close = getattr(self.answer, "close", None)
            if close is not None:
                close()
        finally:
            self.body.close()
