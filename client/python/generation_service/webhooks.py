"""Verifying a webhook delivery, per the Standard Webhooks specification (https://www.standardwebhooks.com).

The service signs ``"<webhook-id>.<webhook-timestamp>.<raw body>"`` with HMAC-SHA256 under the account's
secret (``whsec_`` + base64 of the key) and sends ``webhook-signature: v1,<base64 signature>`` (several,
space-separated, while a secret is rotated). A delivery is trusted only when one signature matches and
its timestamp is within five minutes of now (a replayed old delivery is refused).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping

from .errors import WebhookVerificationError
from .models import WebhookEvent, as_object

TOLERANCE_SECONDS = 5 * 60
"""How far a delivery's timestamp may be from now, either way."""

_SECRET_PREFIX = "whsec_"


def _key(secret: str) -> bytes:
    encoded = secret[len(_SECRET_PREFIX) :] if secret.startswith(_SECRET_PREFIX) else secret
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as error:
        raise WebhookVerificationError("The webhook secret is not whsec_ followed by base64") from error


def _text(body: bytes | str) -> str:
    return body.decode("utf-8") if isinstance(body, bytes) else body


def sign_webhook(webhook_id: str, timestamp: int, body: bytes | str, secret: str) -> str:
    """The ``webhook-signature`` value (``v1,<base64>``) the service sends for this id, time and body."""
    content = f"{webhook_id}.{timestamp}.{_text(body)}".encode()
    digest = hmac.new(_key(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    raise WebhookVerificationError(f"The delivery has no {name} header")


def verify_webhook(
    raw_body: bytes | str,
    headers: Mapping[str, str],
    secret: str,
    *,
    now: float | None = None,
) -> WebhookEvent:
    """Checks a delivery and returns its event; raises ``WebhookVerificationError`` unless it is genuine.

    Pass the body exactly as received (bytes, before any JSON parsing) and its headers (any case).
    ``now`` (epoch seconds) is for tests; the default is the clock.
    """
    webhook_id = _header(headers, "webhook-id")
    stamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    try:
        timestamp = int(stamp)
    except ValueError as error:
        raise WebhookVerificationError(f"webhook-timestamp is not epoch seconds: {stamp!r}") from error
    current = time.time() if now is None else now
    if timestamp < current - TOLERANCE_SECONDS:
        raise WebhookVerificationError("The delivery's timestamp is too old")
    if timestamp > current + TOLERANCE_SECONDS:
        raise WebhookVerificationError("The delivery's timestamp is too new")
    expected = sign_webhook(webhook_id, timestamp, raw_body, secret)
    # Each entry is "<version>,<signature>"; only v1 exists. compare_digest: no timing leak of the match.
    if not any(hmac.compare_digest(entry, expected) for entry in signatures.split(" ") if entry.startswith("v1,")):
        raise WebhookVerificationError("No webhook-signature matches the body under this secret")
    try:
        body = as_object(json.loads(_text(raw_body)))
    except ValueError as error:
        raise WebhookVerificationError("The signed body is not JSON") from error
    if body is None:
        raise WebhookVerificationError("The signed body is not a JSON object")
    return WebhookEvent.from_json(body)
