"""The client against a running service (`npm test` runs it on the local stack: test/e2e/python-client.test.ts).

With ``GENERATION_API_URL`` and ``GENERATION_API_KEY`` (a key with credits, on a service whose provider
is the mock provider): an image and a video task to completion, an upload used by an edit, a failed task,
a 400 with its field details, a refused key, idempotent submits, the listings, and the operations the
client leaves out refusing a key. With ``GENERATION_CAPPED_API_URL``, ``GENERATION_CAPPED_API_KEY``,
``GENERATION_WEBHOOK_SECRET`` and ``GENERATION_WEBHOOK_PORT`` (a stack that sends one task at a time to
the provider and may deliver webhooks over plain http to that port on 127.0.0.1): a cancel, and a real
signed delivery verified. Without the variables these tests are not defined (the jest file checks they ran).
"""

from __future__ import annotations

import binascii
import json
import os
import struct
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from generation_service import (
    NOT_FOR_API_KEYS,
    ApiError,
    Client,
    Task,
    TaskFailedError,
    WaitTimeoutError,
    WebhookVerificationError,
    verify_webhook,
)

from .test_openapi import document_operations, effective_security

ENV = os.environ
# Each wait for a task's end, on the wall clock: generous, for a loaded machine.
WAIT_SECONDS = float(ENV.get("GENERATION_WAIT_SECONDS", "120"))
# The local stack answers at once: poll faster than the 2 s a deployment asks for.
POLL = 0.25
QUICK = {"mockDelayMs": 300}


def tiny_png() -> bytes:
    """A real one-pixel RGB PNG (the service checks an upload's bytes; the mock provider reads it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", binascii.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(bytes([0, 0, 255, 0]))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


if ENV.get("GENERATION_API_URL") and ENV.get("GENERATION_API_KEY"):

    class ServiceTest(unittest.TestCase):
        client: Client

        @classmethod
        def setUpClass(cls) -> None:
            cls.client = Client(ENV["GENERATION_API_URL"], ENV["GENERATION_API_KEY"])

        def test_an_image_task_to_completion(self) -> None:
            # Act
            submitted = self.client.generate_image(
                model="image-model-1", prompt="a python lighthouse", aspect_ratio="1:1", provider_input=QUICK
            )
            task = self.client.wait(submitted.task_id, WAIT_SECONDS, poll_interval=POLL)

            # Assert
            self.assertEqual((submitted.status, submitted.credits_used), (0, 3))
            self.assertIsInstance(task, Task)
            self.assertEqual((task.status, task.type, task.credits_refunded), (1, "image", False))
            self.assertEqual(len(task.image_urls or []), 1)
            self.assertTrue(download((task.image_urls or [""])[0]).startswith(b"\x89PNG"))

        def test_a_video_task_with_run(self) -> None:
            task = self.client.run(
                model="video-b-2-text-to-video",
                input_mode="text_to_video",
                prompt="a python wave",
                provider_input=QUICK,
                timeout=WAIT_SECONDS,
                poll_interval=POLL,
            )
            self.assertEqual((task.status, task.type), (1, "video"))
            self.assertEqual(download(task.video_url or "")[4:8], b"ftyp")

        def test_an_upload_from_a_file_used_by_an_edit(self) -> None:
            # Prepare
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "photo.png")
                with open(path, "wb") as file:
                    file.write(tiny_png())

                # Act
                reference = self.client.upload_file(path)
            task = self.client.run(
                model="image-model-1",
                prompt="make it snow",
                input_image_urls=[reference],
                provider_input=QUICK,
                timeout=WAIT_SECONDS,
                poll_interval=POLL,
            )

            # Assert
            self.assertRegex(reference, r"^upload://[0-9a-f-]{36}$")
            self.assertEqual(task.input_image_urls, [reference])
            self.assertTrue(download((task.image_urls or [""])[0]).startswith(b"\x89PNG"))

        def test_uploaded_bytes_that_are_not_the_declared_type_are_a_400_naming_the_entry(self) -> None:
            reference = self.client.upload_file(b"plain text, not a picture", content_type="image/png")
            with self.assertRaises(ApiError) as raised:
                self.client.generate_image(model="image-model-1", prompt="p", input_image_urls=[reference])
            self.assertEqual(raised.exception.status, 400)
            self.assertEqual(list(raised.exception.field_errors), ["inputImageUrls.0"])

        def test_a_failed_task_raises_from_run_with_the_task_refunded(self) -> None:
            with self.assertRaises(TaskFailedError) as raised:
                self.client.run(
                    model="image-model-1",
                    prompt="a failing lighthouse",
                    provider_input={**QUICK, "mockOutcome": "fail"},
                    timeout=WAIT_SECONDS,
                    poll_interval=POLL,
                )
            task = raised.exception.task
            self.assertEqual((task.status, task.error_code, task.credits_refunded), (2, "PROVIDER_ERROR", True))

        def test_wait_raises_when_its_timeout_ends_first(self) -> None:
            slow = {"mockDelayMs": 60_000}
            submitted = self.client.generate_image(model="image-model-1", prompt="slow", provider_input=slow)
            with self.assertRaises(WaitTimeoutError) as raised:
                self.client.wait(submitted.task_id, timeout=0.5, poll_interval=POLL)
            self.assertEqual((raised.exception.task.task_id, raised.exception.task.status), (submitted.task_id, 0))

        def test_a_400_carries_the_field_details(self) -> None:
            with self.assertRaises(ApiError) as raised:
                self.client.generate_image(model="image-model-1", prompt="", width=5)
            error = raised.exception
            self.assertEqual((error.status, error.error), (400, "Invalid request"))
            self.assertEqual(set(error.field_errors), {"prompt", "width"})
            self.assertEqual(error.details["formErrors"], [])

        def test_a_refused_key_is_a_401(self) -> None:
            stranger = Client(ENV["GENERATION_API_URL"], "gsk_live_" + "A" * 43)
            with self.assertRaises(ApiError) as raised:
                stranger.models()
            self.assertEqual((raised.exception.status, raised.exception.error), (401, "Unauthorized"))

        def test_the_same_idempotency_key_is_one_task_and_each_call_without_one_is_new(self) -> None:
            key = f"python-{time.time_ns()}"
            first = self.client.generate_image(model="image-model-4", prompt="once", idempotency_key=key)
            again = self.client.generate_image(model="image-model-4", prompt="once", idempotency_key=key)
            other = self.client.generate_image(model="image-model-4", prompt="once")
            self.assertEqual(again.task_id, first.task_id)
            self.assertNotEqual(other.task_id, first.task_id)

        def test_listings_credits_usage_and_models(self) -> None:
            # Prepare
            submitted = self.client.generate_image(model="image-model-1", prompt="listed", provider_input=QUICK)

            # Act
            page = self.client.list_tasks(limit=100, type="image")
            credits = self.client.credits(limit=100)
            usage = self.client.usage(group_by="model")
            models = self.client.models()

            # Assert
            self.assertIn(submitted.task_id, [task.task_id for task in page.tasks])
            self.assertTrue(all(task.type == "image" for task in page.tasks))
            self.assertIn(("debit", submitted.task_id), [(entry.kind, entry.task_id) for entry in credits.entries])
            self.assertIn("image-model-1", [row.group for row in usage.rows])
            self.assertGreater(usage.totals.debited, 0)
            self.assertEqual(len(models.models), 20)
            self.assertEqual({model.type for model in models.models}, {"image", "video"})

        def test_the_operations_left_out_that_the_document_opens_to_keys_refuse_a_key(self) -> None:
            # Reads only: a write that were wrongly let through would change the suite's account.
            operations = document_operations()
            checked = []
            for operation_id in NOT_FOR_API_KEYS:
                method, path, operation = operations[operation_id]
                if method != "GET" or "bearerKey" not in effective_security(operation):
                    continue
                with self.subTest(operation_id):
                    key = {"Authorization": f"Bearer {ENV['GENERATION_API_KEY']}"}
                    request = urllib.request.Request(ENV["GENERATION_API_URL"] + path, headers=key)
                    with self.assertRaises(urllib.error.HTTPError) as raised:
                        urllib.request.urlopen(request, timeout=30)
                    self.assertEqual(raised.exception.code, 403)
                    checked.append(operation_id)
            self.assertGreater(len(checked), 0)

else:
    print("tests/test_e2e.py: the service tests need GENERATION_API_URL and GENERATION_API_KEY; not defined")


CAPPED = (
    "GENERATION_CAPPED_API_URL",
    "GENERATION_CAPPED_API_KEY",
    "GENERATION_WEBHOOK_SECRET",
    "GENERATION_WEBHOOK_PORT",
)
if all(ENV.get(name) for name in CAPPED):

    class Receiver:
        """A webhook endpoint on 127.0.0.1: keeps each delivery's raw body and headers."""

        def __init__(self, port: int) -> None:
            self.deliveries: list[tuple[bytes, dict[str, str]]] = []
            self.arrived = threading.Condition()
            outer = self

            class Handler(BaseHTTPRequestHandler):
                def do_POST(self) -> None:
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    with outer.arrived:
                        outer.deliveries.append((body, dict(self.headers.items())))
                        outer.arrived.notify_all()
                    self.send_response(204)
                    self.end_headers()

                def log_message(self, format: str, *args: Any) -> None:
                    pass

            self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
            threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

        def first_for(self, task_id: str, seconds: float) -> tuple[bytes, dict[str, str]] | None:
            """The first delivery whose body names the task, once it came, or None after ``seconds``."""

            def find() -> tuple[bytes, dict[str, str]] | None:
                return next((d for d in self.deliveries if task_id.encode() in d[0]), None)

            with self.arrived:
                self.arrived.wait_for(lambda: find() is not None, timeout=seconds)
                return find()

        def close(self) -> None:
            self.server.shutdown()
            self.server.server_close()

    class CappedStackTest(unittest.TestCase):
        """On a stack that keeps one task at a time with the provider: a second task stays queued."""

        client: Client
        receiver: Receiver

        @classmethod
        def setUpClass(cls) -> None:
            cls.client = Client(ENV["GENERATION_CAPPED_API_URL"], ENV["GENERATION_CAPPED_API_KEY"])
            cls.receiver = Receiver(int(ENV["GENERATION_WEBHOOK_PORT"]))

        @classmethod
        def tearDownClass(cls) -> None:
            cls.receiver.close()

        def wait_for_stage(self, task_id: str, stage: str) -> Task:
            deadline = time.monotonic() + WAIT_SECONDS
            task = self.client.get_task(task_id)
            while task.stage != stage and task.status == 0 and time.monotonic() < deadline:
                time.sleep(POLL)
                task = self.client.get_task(task_id)
            return task

        def test_a_real_delivery_verifies_with_the_accounts_secret(self) -> None:
            # Prepare
            secret = ENV["GENERATION_WEBHOOK_SECRET"]
            port = ENV["GENERATION_WEBHOOK_PORT"]

            # Act
            submitted = self.client.generate_image(
                model="image-model-1",
                prompt="tell python when done",
                provider_input=QUICK,
                webhook_url=f"http://127.0.0.1:{port}/generation",
            )
            task = self.client.wait(submitted.task_id, WAIT_SECONDS, poll_interval=POLL)
            delivery = self.receiver.first_for(submitted.task_id, WAIT_SECONDS)

            # Assert
            self.assertIsNotNone(delivery, "no webhook delivery arrived")
            body, headers = delivery or (b"", {})
            event = verify_webhook(body, headers, secret)
            self.assertEqual(event.type, "task.completed")
            self.assertIsInstance(event.data, Task)
            self.assertEqual(event.task, task)
            with self.assertRaises(WebhookVerificationError):
                verify_webhook(body.replace(b"task.completed", b"task.failed"), headers, secret)
            with self.assertRaises(WebhookVerificationError):
                verify_webhook(body, headers, secret, now=int(headers["webhook-timestamp"]) + 301)
            self.assertEqual(json.loads(body)["data"]["taskId"], submitted.task_id)

        def test_cancel_a_queued_task_refunded_and_a_started_one_is_a_409(self) -> None:
            # Prepare: the first task holds the one slot with the provider, so the second waits here
            hold = {"mockDelayMs": 20_000}
            running = self.client.generate_image(model="image-model-1", prompt="hold the slot", provider_input=hold)
            started = self.wait_for_stage(running.task_id, "running")
            queued = self.client.generate_image(model="image-model-1", prompt="cancel me")
            before = self.client.get_task(queued.task_id)

            # Act
            cancelled = self.client.cancel_task(queued.task_id)
            with self.assertRaises(ApiError) as refused:
                self.client.cancel_task(running.task_id)
            credits = self.client.credits(limit=1)

            # Assert
            self.assertEqual((started.status, started.stage), (0, "running"))
            self.assertEqual((before.status, before.stage), (0, "queued"))
            self.assertEqual(
                (cancelled.status, cancelled.error_code, cancelled.credits_refunded), (2, "CANCELLED", True)
            )
            self.assertEqual((refused.exception.status, refused.exception.error), (409, "Task already started"))
            self.assertEqual((credits.entries[0].kind, credits.entries[0].task_id), ("refund", queued.task_id))

else:
    print("tests/test_e2e.py: the cancel and webhook tests need GENERATION_CAPPED_API_URL and the rest; not defined")
