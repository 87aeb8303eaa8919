"""A client of the generation service, on Python's standard library alone.

    from generation_service import Client

    client = Client("https://api.example.com", "gsk_live_...")
    task = client.run(model="image-model-1", prompt="a lighthouse at dusk")
    print(task.image_urls)

See docs/guides/python.md.
"""

from .client import NOT_FOR_API_KEYS, OPERATIONS, Client, __version__
from .errors import (
    ApiError,
    GenerationServiceError,
    NetworkError,
    StorageError,
    TaskFailedError,
    WaitTimeoutError,
    WebhookVerificationError,
)
from .models import (
    Credits,
    CreditsLowEvent,
    KeySpendLimitEvent,
    LedgerEntry,
    Model,
    Models,
    Submission,
    Task,
    TaskList,
    TaskSummary,
    UploadStart,
    Usage,
    UsageFigures,
    UsageRow,
    WebhookEvent,
)
from .webhooks import sign_webhook, verify_webhook

__all__ = [
    "NOT_FOR_API_KEYS",
    "OPERATIONS",
    "ApiError",
    "Client",
    "Credits",
    "CreditsLowEvent",
    "GenerationServiceError",
    "KeySpendLimitEvent",
    "LedgerEntry",
    "Model",
    "Models",
    "NetworkError",
    "StorageError",
    "Submission",
    "Task",
    "TaskFailedError",
    "TaskList",
    "TaskSummary",
    "UploadStart",
    "Usage",
    "UsageFigures",
    "UsageRow",
    "WaitTimeoutError",
    "WebhookEvent",
    "WebhookVerificationError",
    "__version__",
    "sign_webhook",
    "verify_webhook",
]
