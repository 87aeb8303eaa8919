"""The API's answers as dataclasses, with snake_case fields.

Each field is the API's camelCase property in snake_case (``creditsUsed`` -> ``credits_used``; ``from``
-> ``from_``, a Python keyword). Times stay ISO 8601 strings, as sent. ``raw`` keeps the whole JSON
object, so a property the API adds later is readable before this package names it.
``tests/test_openapi.py`` checks every class here against the schemas of ``docs/openapi.json``.
"""

from __future__ import annotations

import dataclasses
import keyword
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, Union

T = TypeVar("T")

TaskStatus = Literal[0, 1, 2]
"""0: pending, 1: completed, 2: failed (credits refunded)."""


def snake_case(name: str) -> str:
    """``inputImageUrls`` -> ``input_image_urls``; a Python keyword gets a trailing ``_`` (``from_``)."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    return f"{snake}_" if keyword.iskeyword(snake) else snake


def camel_case(name: str) -> str:
    """``input_image_urls`` -> ``inputImageUrls``; ``from_`` -> ``from``."""
    first, *rest = name.rstrip("_").split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def as_object(value: Any) -> dict[str, Any] | None:
    """``value`` typed as a JSON object when it is one, else None."""
    return typing.cast(dict[str, Any], value) if isinstance(value, dict) else None


def _convert(hint: Any, value: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        if value is None:
            return None
        options = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _convert(options[0], value) if len(options) == 1 else value
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(hint)
        return [_convert(item, entry) for entry in typing.cast(list[Any], value)]
    json_object = as_object(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint) and json_object is not None:
        return from_json(hint, json_object)
    return value


def from_json(cls: type[T], data: dict[str, Any]) -> T:
    """Builds the dataclass ``cls`` from the API's JSON object (absent properties become ``None``)."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):  # type: ignore[arg-type]
        if spec.name == "raw":
            values["raw"] = data
            continue
        key = camel_case(spec.name)
        if key in data:
            values[spec.name] = _convert(hints[spec.name], data[key])
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            values[spec.name] = None
    return cls(**values)


def _raw() -> Any:  # a field of its own for each instance, left out of repr and ==
    return field(default_factory=dict[str, Any], repr=False, compare=False)


@dataclass
class Submission:
    """The 202 of a submit: the task's id, ``status`` 0 (an idempotent replay: its status now), the debit."""

    task_id: str
    status: TaskStatus
    credits_used: int
    raw: dict[str, Any] = _raw()


@dataclass
class Task:
    """A task (``GET /api/ai/tasks/{id}``, a cancel's answer, a webhook's ``data``).

    Pending (``status`` 0) has ``stage`` (``queued`` or ``running``) and, while queued, ``queued_ahead``
    and ``estimated_start_at``;
    completed (1) has ``image_urls`` or ``video_url``; failed (2) has ``error_code`` and ``error_message``,
    its credits refunded.
    """

    task_id: str
    type: Literal["image", "video"]
    status: TaskStatus
    model: str
    prompt: str
    credits_used: int
    credits_refunded: bool
    created_at: str
    updated_at: str
    input_image_urls: list[str] | None = None
    stage: Literal["queued", "running"] | None = None
    queued_ahead: int | None = None
    estimated_start_at: str | None = None
    image_urls: list[str] | None = None
    video_url: str | None = None
    results_expire_at: str | None = None
    results_expired_at: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    provider_error_code: str | None = None
    raw: dict[str, Any] = _raw()

    @property
    def ended(self) -> bool:
        """Completed or failed: the status will not change again."""
        return self.status != 0

    @property
    def completed(self) -> bool:
        return self.status == 1

    @property
    def failed(self) -> bool:
        return self.status == 2


@dataclass
class TaskSummary:
    """A task in a listing: no prompt nor results (read the task for them)."""

    task_id: str
    type: Literal["image", "video"]
    status: TaskStatus
    model: str
    credits_used: int
    credits_refunded: bool
    created_at: str
    updated_at: str
    stage: Literal["queued", "running"] | None = None
    error_code: str | None = None
    raw: dict[str, Any] = _raw()


@dataclass
class TaskList:
    """A page of tasks, newest first; pass ``next`` as ``cursor`` for the next page (``None``: the last)."""

    tasks: list[TaskSummary]
    next: str | None
    raw: dict[str, Any] = _raw()


@dataclass
class LedgerEntry:
    kind: Literal["grant", "debit", "refund"]
    delta: int
    at: str
    task_id: str | None = None
    grant_id: str | None = None
    raw: dict[str, Any] = _raw()


@dataclass
class Credits:
    """The balance (the sum of every ledger entry) and a page of the ledger, newest first."""

    balance: int
    entries: list[LedgerEntry]
    next: str | None
    raw: dict[str, Any] = _raw()


@dataclass
class TaskCounts:
    accepted: int
    completed: int
    failed: int
    pending: int
    raw: dict[str, Any] = _raw()


@dataclass
class UsageFigures:
    debited: int
    refunded: int
    net: int
    tasks: TaskCounts
    raw: dict[str, Any] = _raw()


@dataclass
class UsageRow(UsageFigures):
    """One day (``YYYY-MM-DD``), API key id or model id in ``group``; ``name``: the key's name."""

    group: str = ""
    name: str | None = None


@dataclass
class Usage:
    """Credits debited, refunded and net, and tasks by status, over ``from_``..``to`` (UTC days, both in)."""

    from_: str
    to: str
    group_by: Literal["day", "key", "model"]
    totals: UsageFigures
    rows: list[UsageRow]
    raw: dict[str, Any] = _raw()


@dataclass
class Model:
    """A model of the catalog: its modes, limits and ``prices`` (as the API lists them)."""

    id: str
    type: Literal["image", "video"]
    prices: list[dict[str, Any]]
    family: str | None = None
    input_modes: list[str] | None = None
    max_prompt_length: int | None = None
    max_reference_images: int | None = None
    aspect_ratios: list[str] | None = None
    durations: list[float] | None = None
    default_duration: float | None = None
    resolutions: list[str] | None = None
    flat_rate: bool | None = None
    raw: dict[str, Any] = _raw()


@dataclass
class Models:
    models: list[Model]
    raw: dict[str, Any] = _raw()


@dataclass
class UploadStart:
    """The presigned POST of ``create_upload``: send ``upload_fields`` then the file to ``upload_url``."""

    upload_id: str
    upload_url: str
    upload_fields: dict[str, str]
    expires_at: str
    url: str
    """``upload://<uploadId>``: the reference for ``input_image_urls``."""
    raw: dict[str, Any] = _raw()


@dataclass
class KeySpendLimitEvent:
    """``data`` of ``key.spend_limit.warning`` and ``key.spend_limit.reached``."""

    key_id: str
    limit: int
    period: Literal["day", "month", "total"]
    spent: int
    resets_at: str | None
    raw: dict[str, Any] = _raw()


@dataclass
class CreditsLowEvent:
    """``data`` of ``credits.low``."""

    balance: int
    threshold: int
    raw: dict[str, Any] = _raw()


WEBHOOK_DATA: dict[str, type[Any]] = {
    "task.completed": Task,
    "task.failed": Task,
    "key.spend_limit.warning": KeySpendLimitEvent,
    "key.spend_limit.reached": KeySpendLimitEvent,
    "credits.low": CreditsLowEvent,
}
"""Each webhook event ``type`` the API sends -> the class of its ``data`` (the document's ``webhooks``)."""


@dataclass
class WebhookEvent:
    """A verified webhook delivery: ``data`` is a ``Task`` for ``task.*``, else the account event's data
    (a plain dict for a type this package does not know yet)."""

    type: str
    timestamp: str
    data: Task | KeySpendLimitEvent | CreditsLowEvent | dict[str, Any]
    raw: dict[str, Any] = _raw()

    @property
    def task(self) -> Task | None:
        """The task of ``task.completed`` and ``task.failed``; None for the account events."""
        return self.data if isinstance(self.data, Task) else None

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> WebhookEvent:
        kind = str(body.get("type", ""))
        data = as_object(body.get("data")) or {}
        data_class = WEBHOOK_DATA.get(kind)
        parsed: Task | KeySpendLimitEvent | CreditsLowEvent | dict[str, Any] = (
            from_json(data_class, data) if data_class else data
        )
        return cls(type=kind, timestamp=str(body.get("timestamp", "")), data=parsed, raw=body)


@dataclass
class FeedEvent:
    """One event of the account's feed; ``id`` is its webhook's ``webhook-id``."""

    id: str
    type: str
    timestamp: str
    data: dict[str, Any]
    raw: dict[str, Any] = _raw()


@dataclass
class WebhookEndpoint:
    """A webhook endpoint of the account (``GET /api/webhooks``); its secret is never shown again."""

    id: str
    url: str
    events: list[str] | None
    enabled: bool
    description: str | None
    secret_created_at: str
    previous_secret_expires_at: str | None
    created_at: str
    updated_at: str
    raw: dict[str, Any] = _raw()


@dataclass
class EventFeed:
    """A page of the event feed, oldest first; pass ``next`` as ``after`` to read on."""

    events: list[FeedEvent]
    next: str | None
    has_more: bool
    raw: dict[str, Any] = _raw()


@dataclass
class WebhookEndpointList:
    endpoints: list[WebhookEndpoint]
    raw: dict[str, Any] = _raw()


@dataclass
class WebhookTestSent:
    """The test event's delivery (see ``webhook_deliveries``) and its ``webhook-id``."""

    delivery_id: str
    event_id: str
    raw: dict[str, Any] = _raw()


@dataclass
class WebhookAttempt:
    attempt: int
    at: str
    status_code: int | None
    duration_ms: int
    error: str | None
    raw: dict[str, Any] = _raw()


@dataclass
class WebhookDelivery:
    """One delivery of an endpoint's log with its attempts; ``event_id`` is its ``webhook-id``."""

    id: str
    endpoint_id: str
    event_id: str
    event_type: str
    event_at: str
    state: str
    attempts: list[WebhookAttempt]
    next_attempt_at: str | None
    delivered_at: str | None
    gave_up_at: str | None
    reason: str | None
    created_at: str
    raw: dict[str, Any] = _raw()


@dataclass
class WebhookDeliveryPage:
    deliveries: list[WebhookDelivery]
    next: str | None
    raw: dict[str, Any] = _raw()
