"""Retries, Retry-After and the Idempotency-Key, over real HTTP against a scripted server on loopback:
the local stack cannot be made to answer 503 (contention) or 429 (rate limit) on demand, so these
answers come from a stand-in that records what the client sent. Sleeps are recorded, not slept."""

from __future__ import annotations

import email.utils
import json
import socket
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from generation_service import ApiError, Client, NetworkError, WaitTimeoutError

SUBMISSION = {"taskId": "t-1", "status": 0, "creditsUsed": 3}
PENDING = {
    "taskId": "t-1",
    "type": "image",
    "status": 0,
    "stage": "running",
    "model": "image-model-1",
    "prompt": "p",
    "creditsUsed": 3,
    "creditsRefunded": False,
    "createdAt": "2026-11-27T00:00:00.000Z",
    "updatedAt": "2026-11-27T00:00:00.000Z",
}


class ScriptedServer:
    """Answers each request with the next (status, headers, body) of its script; the last one repeats."""

    def __init__(self, script: list[tuple[int, dict[str, str], Any]]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                outer.requests.append(
                    {"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                     "body": self.rfile.read(length).decode()}
                )
                status, headers, body = outer.script[min(len(outer.requests), len(outer.script)) - 1]
                payload = json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class RetriesTest(unittest.TestCase):
    def serve(self, *script: tuple[int, dict[str, str], Any]) -> tuple[Client, ScriptedServer, list[float]]:
        server = ScriptedServer(list(script))
        self.addCleanup(server.close)
        client = Client(server.url, "gsk_live_test", timeout=10, max_retries=2, max_retry_wait=30)
        slept: list[float] = []
        client._sleep = slept.append
        return client, server, slept

    def test_a_429_is_retried_after_its_retry_after_with_the_same_idempotency_key(self) -> None:
        # Prepare
        client, server, slept = self.serve(
            (429, {"Retry-After": "3"}, {"error": "Too many requests"}), (202, {}, SUBMISSION)
        )

        # Act
        submission = client.generate_image(model="image-model-1", prompt="p", num_outputs=2)

        # Assert
        self.assertEqual(submission.task_id, "t-1")
        self.assertEqual(slept, [3.0])
        keys = [request["headers"]["Idempotency-Key"] for request in server.requests]
        self.assertEqual(len(keys), 2)
        self.assertEqual(keys[0], keys[1])
        sent = json.loads(server.requests[0]["body"])
        self.assertEqual(sent, {"model": "image-model-1", "prompt": "p", "numOutputs": 2})
        self.assertEqual(server.requests[0]["headers"]["Authorization"], "Bearer gsk_live_test")

    def test_each_submit_has_a_new_key_unless_one_is_given(self) -> None:
        client, server, _ = self.serve((202, {}, SUBMISSION))
        client.generate_image(model="image-model-1", prompt="p")
        client.generate_image(model="image-model-1", prompt="p")
        client.generate_video(model="video-d3", prompt="p", input_mode="text_to_video", idempotency_key="mine-1")
        keys = [request["headers"]["Idempotency-Key"] for request in server.requests]
        self.assertNotEqual(keys[0], keys[1])
        self.assertEqual(keys[2], "mine-1")

    def test_a_503_with_a_date_or_without_retry_after_is_retried(self) -> None:
        # Prepare: Retry-After as an HTTP date about 5 s ahead, then none (a jittered backoff of at most 1 s)
        soon = email.utils.formatdate(time.time() + 5, usegmt=True)
        client, _, slept = self.serve(
            (503, {"Retry-After": soon}, {"error": "Service busy, retry later"}),
            (503, {}, {"error": "Service busy, retry later"}),
            (200, {}, {"models": []}),
        )

        # Act
        models = client.models()

        # Assert
        self.assertEqual(models.models, [])
        self.assertEqual(len(slept), 2)
        self.assertTrue(3 <= slept[0] <= 6, slept)
        self.assertTrue(0 <= slept[1] <= 1, slept)

    def test_retries_are_bounded_and_the_last_error_carries_status_body_and_retry_after(self) -> None:
        client, server, slept = self.serve((503, {"Retry-After": "1"}, {"error": "Service busy, retry later"}))
        with self.assertRaises(ApiError) as raised:
            client.get_task("t-1")
        self.assertEqual(len(server.requests), 3)
        self.assertEqual(slept, [1.0, 1.0])
        self.assertEqual((raised.exception.status, raised.exception.error), (503, "Service busy, retry later"))
        self.assertEqual(raised.exception.retry_after, 1.0)

    def test_a_retry_after_longer_than_max_retry_wait_is_handed_to_the_caller_at_once(self) -> None:
        client, server, slept = self.serve((429, {"Retry-After": "3600"}, {"error": "Daily quota exceeded"}))
        with self.assertRaises(ApiError) as raised:
            client.list_tasks()
        self.assertEqual((len(server.requests), slept), (1, []))
        self.assertEqual(raised.exception.retry_after, 3600.0)

    def test_other_errors_are_not_retried_and_carry_error_and_details(self) -> None:
        details = {"fieldErrors": {"prompt": ["Must not be empty"]}, "formErrors": []}
        refusal = {"error": "Invalid request", "details": details}
        poorer = {"error": "Insufficient credits", "required": 3, "balance": 1}
        client, server, _ = self.serve((400, {}, refusal), (402, {}, poorer))
        with self.assertRaises(ApiError) as invalid:
            client.generate_image(model="image-model-1", prompt="")
        with self.assertRaises(ApiError) as poor:
            client.generate_image(model="image-model-1", prompt="p")
        self.assertEqual(len(server.requests), 2)
        self.assertEqual(invalid.exception.field_errors, {"prompt": ["Must not be empty"]})
        self.assertEqual(invalid.exception.details, refusal["details"])
        self.assertEqual((poor.exception.status, poor.exception.body["balance"]), (402, 1))

    def test_query_parameters_are_sent_in_the_apis_names(self) -> None:
        tasks = {"accepted": 0, "completed": 0, "failed": 0, "pending": 0}
        totals = {"debited": 0, "refunded": 0, "net": 0, "tasks": tasks}
        usage = {"from": "2026-11-01", "to": "2026-11-02", "groupBy": "key", "rows": [], "totals": totals}
        client, server, _ = self.serve((200, {}, usage))
        answer = client.usage(from_="2026-11-01", to="2026-11-02", group_by="key")
        self.assertEqual(server.requests[0]["path"], "/api/ai/usage?from=2026-11-01&to=2026-11-02&groupBy=key")
        self.assertEqual((answer.from_, answer.group_by, answer.totals.tasks.pending), ("2026-11-01", "key", 0))

    def test_wait_gives_up_after_its_timeout_with_the_last_read(self) -> None:
        client, server, _ = self.serve((200, {}, PENDING))
        client._sleep = time.sleep
        with self.assertRaises(WaitTimeoutError) as raised:
            client.wait("t-1", timeout=0.3, poll_interval=0.05)
        self.assertEqual((raised.exception.task.status, raised.exception.task.stage), (0, "running"))
        self.assertGreater(len(server.requests), 1)

    def test_no_answer_is_retried_for_reads_but_not_for_a_cancel(self) -> None:
        # Prepare: a port nobody listens on
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        client = Client(f"http://127.0.0.1:{port}", "gsk_live_test", timeout=5, max_retries=2)
        slept: list[float] = []
        client._sleep = slept.append

        # Act / Assert
        with self.assertRaises(NetworkError):
            client.get_task("t-1")
        self.assertEqual(len(slept), 2)
        with self.assertRaises(NetworkError):
            client.cancel_task("t-1")
        self.assertEqual(len(slept), 2)


if __name__ == "__main__":
    unittest.main()
