"""The client: one method per operation an API key may call, and the helpers ``wait``, ``run``,
``upload_file``.

``OPERATIONS`` maps each such operationId of ``docs/openapi.json`` to its method, HTTP method, path and
answer class; ``NOT_FOR_API_KEYS`` names every other operationId and why a key-holding consumer has no
method for it. ``tests/test_openapi.py`` fails when the document has an operation in neither, a request
property or query parameter a method does not take, or an answer property a dataclass lacks.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from . import uploads
from .errors import ApiError, NetworkError, TaskFailedError, WaitTimeoutError
from .models import (
    Credits,
    Models,
    Submission,
    Task,
    TaskList,
    EventFeed,
    UploadStart,
    Usage,
    WebhookDelivery,
    WebhookDeliveryPage,
    WebhookEndpoint,
    WebhookEndpointList,
    WebhookTestSent,
    camel_case,
    from_json,
)

__version__ = "0.1.0"


@dataclass(frozen=True)
class Operation:
    """An operation of the OpenAPI document and the method that calls it."""

    method: str
    http_method: Literal["GET", "POST", "DELETE"]
    path: str
    answer: type[Any]


OPERATIONS: dict[str, Operation] = {
    "submitImage": Operation("generate_image", "POST", "/api/ai/image/generate", Submission),
    "submitVideo": Operation("generate_video", "POST", "/api/ai/video/generate", Submission),
    "uploads": Operation("create_upload", "POST", "/api/ai/uploads", UploadStart),
    "getTask": Operation("get_task", "GET", "/api/ai/tasks/{id}", Task),
    "cancelTask": Operation("cancel_task", "POST", "/api/ai/tasks/{id}/cancel", Task),
    "deleteTask": Operation("delete_task", "DELETE", "/api/ai/tasks/{id}", type(None)),
    "deleteUpload": Operation("delete_upload", "DELETE", "/api/ai/uploads/{id}", type(None)),
    "listTasks": Operation("list_tasks", "GET", "/api/ai/tasks", TaskList),
    "getCredits": Operation("credits", "GET", "/api/ai/credits", Credits),
    "getUsage": Operation("usage", "GET", "/api/ai/usage", Usage),
    "listModels": Operation("models", "GET", "/api/ai/models", Models),
    "listEvents": Operation("events", "GET", "/api/events", EventFeed),
    "webhookEndpointsList": Operation("webhook_endpoints", "GET", "/api/webhooks", WebhookEndpointList),
    "webhookEndpointsGet": Operation("webhook_endpoint", "GET", "/api/webhooks/{id}", WebhookEndpoint),
    "webhookEndpointsTest": Operation("test_webhook_endpoint", "POST", "/api/webhooks/{id}/test", WebhookTestSent),
    "webhookEndpointsDeliveries": Operation(
        "webhook_deliveries", "GET", "/api/webhooks/{id}/deliveries", WebhookDeliveryPage
    ),
    "webhookEndpointsRedeliver": Operation(
        "redeliver_webhook", "POST", "/api/webhooks/{id}/deliveries/{deliveryId}/redeliver", WebhookDelivery
    ),
}
"""Every operation a holder of an API key can call: operationId -> the method for it."""

_SESSION_ONLY = "the dashboard's, with a signed-in session: an API key gets 403"
NOT_FOR_API_KEYS: dict[str, str] = {
    "providerCallback": "the upstream provider's callback, authenticated by a signature in its URL",
    "openapi": "the OpenAPI document itself (docs/openapi.json in the repository)",
    "authSignIn": "browser sign-in (a redirect to the identity provider)",
    "authCallback": "browser sign-in (the identity provider's redirect back)",
    "authSignOut": _SESSION_ONLY,
    "authSignOutEverywhere": _SESSION_ONLY,
    "session": _SESSION_ONLY,
    "keysList": _SESSION_ONLY,
    "keysCreate": _SESSION_ONLY,
    "keysRotate": _SESSION_ONLY,
    "keysUpdate": _SESSION_ONLY,
    "keysRevoke": _SESSION_ONLY,
    "auditLog": _SESSION_ONLY,
    "accountAlertsGet": _SESSION_ONLY,
    "accountAlertsUpdate": _SESSION_ONLY,
    "accountLimitGet": _SESSION_ONLY,
    "accountLimitUpdate": _SESSION_ONLY,
    "accountExport": _SESSION_ONLY,
    "accountClose": _SESSION_ONLY,
    "webhookEndpointsCreate": _SESSION_ONLY + " (a leaked key must not redirect events)",
    "webhookEndpointsUpdate": _SESSION_ONLY + " (a leaked key must not redirect events)",
    "webhookEndpointsDelete": _SESSION_ONLY,
    "webhookEndpointsRotate": _SESSION_ONLY,
}
"""The document's other operations, each with why a key-holding consumer has no method for it."""

SERVER_WAIT_MAX_SECONDS: int | None = 20
"""The longest ``GET /api/ai/tasks/{id}?wait=`` the API holds a read open (whole seconds, 1 to 20), so
``wait`` holds reads open instead of polling; ``None`` would make it poll."""

POLL_INTERVAL_SECONDS = 2.0
"""The pace the API asks for: each pending task at most every 2 s."""

_RETRIED_STATUSES = (429, 503)


def _retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` as seconds (it may be a number of seconds or an HTTP date), or None."""
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _query(values: dict[str, Any]) -> dict[str, str]:
    return {camel_case(name): str(value) for name, value in values.items() if value is not None}


def _body(values: dict[str, Any]) -> dict[str, Any]:
    return {camel_case(name): value for name, value in values.items() if value is not None}


class Client:
    """A client of the generation service.

    ``timeout`` bounds each HTTP request (seconds). Answers 429 and 503 are retried up to
    ``max_retries`` times, after their ``Retry-After`` (or a jittered backoff without one), unless it asks
    for more than ``max_retry_wait`` seconds: the ``ApiError`` then carries ``retry_after`` for the caller
    to decide. A connection that fails is retried only where that is safe: reads, and submits (they carry
    an ``Idempotency-Key``, so a retried submit is never a second task nor a second debit).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        timeout: float = 30.0,
        *,
        max_retries: int = 3,
        max_retry_wait: float = 60.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._sleep: Callable[[float], None] = time.sleep

    @classmethod
    def from_env(cls, **options: Any) -> Client:
        """A client from ``GENERATION_API_URL`` and ``GENERATION_API_KEY``."""
        return cls(os.environ["GENERATION_API_URL"], os.environ["GENERATION_API_KEY"], **options)

    # --- Submitting --------------------------------------------------------------------------------

    def generate_image(
        self,
        *,
        model: str,
        prompt: str,
        negative_prompt: str | None = None,
        width: int | None = None,
        height: int | None = None,
        aspect_ratio: str | None = None,
        num_outputs: int | None = None,
        seed: str | None = None,
        guidance_scale: float | None = None,
        num_inference_steps: int | None = None,
        input_image_urls: list[str] | None = None,
        provider_input: dict[str, Any] | None = None,
        webhook_url: str | None = None,
        result_retention: str | None = None,
        idempotency_key: str | None = None,
        prefer: str | None = None,
    ) -> Submission | Task:
        """Submits an image task (``POST /api/ai/image/generate``); answers at once with its id.

        ``prefer``: ``"wait=N"`` (seconds, at most 20) answers with the ended ``Task`` when it ends within
        N seconds, else the ``Submission`` as without it (``run`` uses it).

        ``input_image_urls`` makes it image-to-image: https URLs, ``upload_file``'s references or
        ``data:`` images. ``idempotency_key``: by default a new one per call, reused by its retries; pass
        your own to make a resubmission after a crash the same task.
        """
        # Every other parameter is a property of the request body (tests/test_openapi.py checks the list).
        fields = dict(locals())
        del fields["self"], fields["idempotency_key"], fields["prefer"]
        return self._submit("submitImage", _body(fields), idempotency_key, prefer)

    def generate_video(
        self,
        *,
        model: str,
        prompt: str,
        input_mode: Literal["text_to_video", "image_to_video"],
        negative_prompt: str | None = None,
        width: int | None = None,
        height: int | None = None,
        aspect_ratio: str | None = None,
        duration: float | None = None,
        fps: int | None = None,
        seed: str | None = None,
        guidance_scale: float | None = None,
        motion_strength: float | None = None,
        camera_motion: str | None = None,
        input_image_urls: list[str] | None = None,
        provider_input: dict[str, Any] | None = None,
        webhook_url: str | None = None,
        result_retention: str | None = None,
        idempotency_key: str | None = None,
        prefer: str | None = None,
    ) -> Submission | Task:
        """Submits a video task (``POST /api/ai/video/generate``); answers at once with its id.

        ``prefer``: as for ``generate_image``."""
        fields = dict(locals())
        del fields["self"], fields["idempotency_key"], fields["prefer"]
        return self._submit("submitVideo", _body(fields), idempotency_key, prefer)

    # --- Reading and cancelling ----------------------------------------------------------------------

    def get_task(self, task_id: str, *, wait: float | None = None) -> Task:
        """Reads a task (only its creator sees it; another's is a 404).

        ``wait``: hold the read open up to this many whole seconds (1 to ``SERVER_WAIT_MAX_SECONDS``)
        until the task ends; the answer comes within about a second of the end, or after the wait with
        the task as it is then.
        """
        if wait is not None and (SERVER_WAIT_MAX_SECONDS is None or not 1 <= int(wait) <= SERVER_WAIT_MAX_SECONDS):
            raise ValueError(f"wait must be a whole number of seconds from 1 to {SERVER_WAIT_MAX_SECONDS}")
        query = {"wait": str(int(wait))} if wait is not None else {}
        return self._call("getTask", {"id": task_id}, query=query)

    def cancel_task(self, task_id: str) -> Task:
        """Cancels a task still queued (``stage == "queued"``): returns it failed (``CANCELLED``), refunded.

        Raises ``ApiError`` 409 once it has started or ended, 404 for an unknown id.
        """
        return self._call("cancelTask", {"id": task_id}, retry_network=False)

    def delete_task(self, task_id: str) -> None:
        """Deletes an ended task with its results and its references in storage; the ledger keeps its entries.

        Raises ``ApiError`` 409 while it is pending (cancel it first), 404 for an unknown or deleted id.
        """
        self._call("deleteTask", {"id": task_id}, retry_network=False)

    def delete_upload(self, upload_id: str) -> None:
        """Deletes an upload (file and record). Raises ``ApiError`` 404 for an unknown, expired or deleted one."""
        self._call("deleteUpload", {"id": upload_id}, retry_network=False)

    def list_tasks(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        status: Literal[0, 1, 2] | None = None,
        type: Literal["image", "video"] | None = None,
    ) -> TaskList:
        """A page of your tasks, newest first; ``cursor``: the previous page's ``next``."""
        return self._call("listTasks", query=_query({"limit": limit, "cursor": cursor, "status": status, "type": type}))

    def events(self, *, after: str | None = None, types: str | None = None, limit: int | None = None) -> EventFeed:
        """A page of the account's events, oldest first, after ``after`` (a previous page's ``next``);
        ``types``: comma-separated event types to keep."""
        return self._call("listEvents", query=_query({"after": after, "types": types, "limit": limit}))

    def webhook_endpoints(self) -> WebhookEndpointList:
        """The account's webhook endpoints (created in the dashboard or with a session), oldest first."""
        return self._call("webhookEndpointsList")

    def webhook_endpoint(self, endpoint_id: str) -> WebhookEndpoint:
        """One webhook endpoint; ``ApiError`` 404 for an unknown id or another account's."""
        return self._call("webhookEndpointsGet", {"id": endpoint_id})

    def test_webhook_endpoint(self, endpoint_id: str) -> WebhookTestSent:
        """Sends a ``webhook.test`` event to the endpoint; its delivery shows in ``webhook_deliveries``."""
        return self._call("webhookEndpointsTest", {"id": endpoint_id}, retry_network=False)

    def webhook_deliveries(
        self,
        endpoint_id: str,
        *,
        state: str | None = None,
        event_type: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> WebhookDeliveryPage:
        """A page of the endpoint's delivery log, newest first, each delivery with its attempts."""
        query = _query({"state": state, "eventType": event_type, "limit": limit, "cursor": cursor})
        return self._call("webhookEndpointsDeliveries", {"id": endpoint_id}, query=query)

    def redeliver_webhook(self, endpoint_id: str, delivery_id: str) -> WebhookDelivery:
        """Sends a delivery again now, with the same ``webhook-id`` (a new attempt in its log)."""
        return self._call(
            "webhookEndpointsRedeliver", {"id": endpoint_id, "deliveryId": delivery_id}, retry_network=False
        )

    def credits(self, *, limit: int | None = None, cursor: str | None = None) -> Credits:
        """Your balance and a page of the ledger, newest first."""
        return self._call("getCredits", query=_query({"limit": limit, "cursor": cursor}))

    def usage(
        self,
        *,
        from_: str | date | None = None,
        to: str | date | None = None,
        group_by: Literal["day", "key", "model"] | None = None,
    ) -> Usage:
        """Credits and tasks by UTC day, API key or model, from ``from_`` to ``to`` (both included).

        The default is the last 30 days by day.
        """
        return self._call("getUsage", query=_query({"from_": from_, "to": to, "group_by": group_by}))

    def models(self) -> Models:
        """The catalog: each model's modes, limits and prices."""
        return self._call("listModels")

    # --- Uploads -------------------------------------------------------------------------------------

    def create_upload(self, *, content_type: str, size: int) -> UploadStart:
        """Starts an upload (``POST /api/ai/uploads``): the presigned POST; ``upload_file`` does both steps."""
        return self._call("uploads", body=_body({"content_type": content_type, "size": size}))

    def upload_file(self, path_or_bytes: str | os.PathLike[str] | bytes, content_type: str | None = None) -> str:
        """Uploads a reference image (PNG, JPEG or WebP) and returns its ``upload://`` reference.

        Both steps: the presigned POST asked for, then the bytes sent straight to storage. Put the
        reference in ``input_image_urls`` before it expires (24 h by default). ``content_type``: by
        default from the file name, else from the bytes. Raises ``ApiError`` from the service (a type it
        does not take, over its size limit) and ``StorageError`` from the storage.
        """
        data, chosen = uploads.read_file(path_or_bytes, content_type)
        started = self.create_upload(content_type=chosen, size=len(data))
        uploads.send_to_storage(started.upload_url, started.upload_fields, data, chosen, self.timeout)
        return started.url

    # --- Waiting -------------------------------------------------------------------------------------

    def wait(self, task_id: str, timeout: float = 600.0, *, poll_interval: float = POLL_INTERVAL_SECONDS) -> Task:
        """Waits until the task ends and returns it, completed (status 1) or failed (status 2, refunded).

        Each read is held open by the API until the task ends (``?wait=``, up to 20 s at a time), so the
        end is seen within about a second; ``poll_interval`` paces plain reads only (the last second
        before ``timeout``, or ``SERVER_WAIT_MAX_SECONDS = None``). Raises ``WaitTimeoutError`` (holding the last read) when it is still pending after
        ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            # The server takes whole seconds from 1: less than a second left is a plain read.
            if SERVER_WAIT_MAX_SECONDS is not None and remaining >= 1:
                task = self.get_task(task_id, wait=int(min(remaining, SERVER_WAIT_MAX_SECONDS)))
            else:
                task = self.get_task(task_id)
            if task.ended:
                return task
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeoutError(task, timeout)
            if SERVER_WAIT_MAX_SECONDS is None or remaining < 1:
                self._sleep(min(poll_interval, remaining))

    def run(self, *, timeout: float = 600.0, poll_interval: float = POLL_INTERVAL_SECONDS, **fields: Any) -> Task:
        """Submits and waits, for scripts: returns the completed task, raises ``TaskFailedError`` if it failed.

        ``fields`` are ``generate_video``'s when they have ``input_mode``, else ``generate_image``'s.
        """
        submit = self.generate_video if "input_mode" in fields else self.generate_image
        # The submit itself waits for the end (``Prefer: wait``); a task still pending then is waited for.
        answer = submit(prefer=f"wait={int(min(timeout, SERVER_WAIT_MAX_SECONDS or 0))}", **fields)
        task = answer if isinstance(answer, Task) else self.wait(answer.task_id, timeout, poll_interval=poll_interval)
        if task.failed:
            raise TaskFailedError(task)
        return task

    # --- HTTP ------------------------------------------------------------------------------------------

    def _submit(
        self, operation_id: str, body: dict[str, Any], idempotency_key: str | None, prefer: str | None = None
    ) -> Submission | Task:
        key = idempotency_key or str(uuid.uuid4())
        headers = {"Idempotency-Key": key, **({"Prefer": prefer} if prefer else {})}
        answer = self._call(operation_id, body=body, headers=headers, raw=True)
        # With ``Prefer: wait``, a 200 carries the ended Task (it has a ``type``); the 202 the Submission.
        return from_json(Task if isinstance(answer, dict) and "type" in answer else Submission, answer)

    def _call(
        self,
        operation_id: str,
        path_params: dict[str, str] | None = None,
        *,
        query: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        retry_network: bool | None = None,
        raw: bool = False,
    ) -> Any:
        operation = OPERATIONS[operation_id]
        path = operation.path
        for name, value in (path_params or {}).items():
            path = path.replace("{" + name + "}", urllib.parse.quote(value, safe=""))
        url = self.base_url + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        sent = {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json"}
        sent["User-Agent"] = f"generation-service-python/{__version__}"
        sent.update(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        safe = operation.http_method == "GET" or "Idempotency-Key" in sent
        answer = self._send(operation.http_method, url, data, sent, safe if retry_network is None else retry_network)
        if operation.answer is type(None):
            return None
        return answer if raw else from_json(operation.answer, answer)

    def _send(self, method: str, url: str, data: bytes | None, headers: dict[str, str], retry_network: bool) -> Any:
        attempt = 0
        while True:
            request = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return _parse(response.read())
            except urllib.error.HTTPError as error:
                status, answer_headers = error.code, dict(error.headers.items())
                parsed = _parse(error.read())
                retry_after = _retry_after_seconds(error.headers.get("Retry-After"))
                failure = ApiError(status, parsed, retry_after=retry_after, headers=answer_headers)
                if status not in _RETRIED_STATUSES or attempt >= self.max_retries:
                    raise failure from None
                delay = retry_after if retry_after is not None else self._backoff(attempt)
                if delay > self.max_retry_wait:
                    raise failure from None
            except OSError as error:  # URLError, a reset or a timeout: no answer at all
                if not retry_network or attempt >= self.max_retries:
                    raise NetworkError(f"{method} {url.split('?')[0]}: {error}") from error
                delay = self._backoff(attempt)
            self._sleep(delay)
            attempt += 1

    @staticmethod
    def _backoff(attempt: int) -> float:
        """Exponential backoff with full jitter: up to 0.5 s, 1 s, 2 s, ... at most 8 s."""
        return random.uniform(0, min(8.0, 0.5 * 2**attempt))


def _parse(raw: bytes) -> Any:
    text = raw.decode("utf-8", "replace")
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text
