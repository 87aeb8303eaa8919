"""The exceptions the client raises: every one is a ``GenerationServiceError``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .models import as_object

if TYPE_CHECKING:
    from .models import Task


class GenerationServiceError(Exception):
    """The base of every exception this package raises."""


class ApiError(GenerationServiceError):
    """An answer other than the one expected, with what the API said.

    ``error`` is the API's short, stable message (``"Invalid request"``, ``"Insufficient credits"``, ...);
    ``details`` its ``details`` (for a 400: ``{"fieldErrors": {...}, "formErrors": [...]}``); ``body`` the
    whole parsed answer (its other fields: ``required``/``balance`` of a 402, ``limit`` of a queue-full
    429, ...); ``retry_after`` the ``Retry-After`` header in seconds, when the answer carried one.
    """

    def __init__(
        self,
        status: int,
        body: Any,
        *,
        retry_after: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.body = body
        self.retry_after = retry_after
        self.headers = headers or {}
        answer = as_object(body) or {}
        self.error: str = str(answer.get("error", "HTTP error"))
        self.details: Any = answer.get("details")
        super().__init__(f"{status} {self.error}" + (f": {self.details}" if self.details else ""))

    @property
    def field_errors(self) -> dict[str, list[str]]:
        """A 400's messages by dotted field path (``inputImageUrls.0``), or ``{}``."""
        messages = as_object((as_object(self.details) or {}).get("fieldErrors")) or {}
        return {path: list(texts) for path, texts in messages.items()}


class NetworkError(GenerationServiceError):
    """No answer: the connection failed or timed out (after the retries a safe request gets)."""


class StorageError(ApiError):
    """The storage refused the upload's form POST (``body`` is its XML error as text)."""


class TaskFailedError(GenerationServiceError):
    """``run`` raises this when the task failed (status 2); its credits were refunded."""

    def __init__(self, task: Task) -> None:
        self.task = task
        super().__init__(f"Task {task.task_id} failed: {task.error_code}: {task.error_message}")


class WaitTimeoutError(GenerationServiceError, TimeoutError):
    """``wait`` gave up: the task was still pending when its ``timeout`` ran out."""

    def __init__(self, task: Task, timeout: float) -> None:
        self.task = task
        super().__init__(f"Task {task.task_id} still pending after {timeout:g} s (stage {task.stage})")


class WebhookVerificationError(GenerationServiceError):
    """A webhook delivery whose signature, headers or timestamp do not check out: do not trust its body."""
