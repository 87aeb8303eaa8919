"""The second step of an upload: the file sent straight to storage with the presigned POST.

``Client.upload_file`` asks the service for the presigned POST (``create_upload``), then calls
``send_to_storage``: every ``upload_fields`` entry as a form field, the file last (the storage reads the
policy before the file), as ``multipart/form-data``, with no API key (the form's signature is the
credential). The storage answers 204.
"""

from __future__ import annotations

import mimetypes
import os
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping

from .errors import NetworkError, StorageError

UPLOAD_CONTENT_TYPES = ("image/png", "image/jpeg", "image/webp")
"""What the service accepts (checked again on the file's bytes when a task names the upload)."""


def read_file(path_or_bytes: str | os.PathLike[str] | bytes, content_type: str | None) -> tuple[bytes, str]:
    """The bytes and their content type: as given, else from the file name, else from the bytes' signature."""
    if isinstance(path_or_bytes, bytes | bytearray | memoryview):
        data = bytes(path_or_bytes)
        guessed = None
    else:
        with open(path_or_bytes, "rb") as file:
            data = file.read()
        guessed = mimetypes.guess_type(os.fspath(path_or_bytes))[0]
    chosen = content_type or guessed or sniff_content_type(data)
    if chosen not in UPLOAD_CONTENT_TYPES:
        raise ValueError(f"Uploads must be one of {', '.join(UPLOAD_CONTENT_TYPES)}, not {chosen}")
    return data, chosen


def sniff_content_type(data: bytes) -> str | None:
    """PNG, JPEG or WebP by the file's first bytes (the signatures the service itself checks), else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def encode_form(fields: Mapping[str, str], data: bytes, content_type: str) -> tuple[bytes, str]:
    """``multipart/form-data``: the fields in order, then ``file``. Returns the body and its content type."""
    boundary = f"----generation-service-{uuid.uuid4().hex}"
    parts: list[bytes] = []
    for name, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="file"\r\n'
        f"Content-Type: {content_type}\r\n\r\n".encode()
    )
    parts.append(data)
    parts.append(f"\r\n--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def send_to_storage(
    upload_url: str, fields: Mapping[str, str], data: bytes, content_type: str, timeout: float
) -> None:
    """POSTs the form to the storage; raises ``StorageError`` (its status and XML error) unless it took it,
    ``NetworkError`` when it did not answer (not retried: ask for a new upload)."""
    body, form_type = encode_form(fields, data, content_type)
    request = urllib.request.Request(upload_url, data=body, method="POST", headers={"Content-Type": form_type})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
    except urllib.error.HTTPError as error:
        text = error.read().decode("utf-8", "replace")
        raise StorageError(error.code, text, headers=dict(error.headers.items())) from None
    except OSError as error:
        raise NetworkError(f"POST {upload_url.split('?')[0]}: {error}") from error
