"""verify_webhook against the Standard Webhooks rules: a signature made by the specification's own
library (the `standardwebhooks` npm package the service signs with), the tolerance, tampering and
rotation. A real delivery is verified by tests/test_e2e.py."""

from __future__ import annotations

import base64
import os
import unittest

from generation_service import Task, WebhookVerificationError, sign_webhook, verify_webhook

# Made with the `standardwebhooks` package: new Webhook(SECRET).sign(ID, new Date(STAMP * 1000), BODY).
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
STAMP = 1767268800
BODY = '{"type":"task.completed","timestamp":"2026-01-01T12:00:00.000Z","data":{"taskId":"t-1"}}'
SIGNATURE = "v1,1Ks87Gf5nX/KRwL6wk4y7gMVR8sygYyuErlh06lp1lk="


def headers(signature: str = SIGNATURE, stamp: int = STAMP) -> dict[str, str]:
    return {"webhook-id": ID, "webhook-timestamp": str(stamp), "webhook-signature": signature}


class VerifyWebhookTest(unittest.TestCase):
    def test_signs_as_the_specifications_library_does(self) -> None:
        self.assertEqual(sign_webhook(ID, STAMP, BODY, SECRET), SIGNATURE)

    def test_a_genuine_delivery_verifies_and_parses_bytes_or_text_with_headers_in_any_case(self) -> None:
        # Act
        from_bytes = verify_webhook(BODY.encode(), headers(), SECRET, now=STAMP + 10)
        shouted = {name.title(): value for name, value in headers().items()}
        from_text = verify_webhook(BODY, shouted, SECRET, now=STAMP - 10)

        # Assert
        self.assertEqual(from_bytes.type, "task.completed")
        self.assertIsInstance(from_bytes.data, Task)
        self.assertEqual(from_bytes.task and from_bytes.task.task_id, "t-1")
        self.assertEqual(from_text, from_bytes)

    def test_one_matching_signature_among_several_is_enough(self) -> None:
        other = sign_webhook(ID, STAMP, BODY, "whsec_" + base64.b64encode(os.urandom(24)).decode())
        event = verify_webhook(BODY, headers(f"{other} {SIGNATURE}"), SECRET, now=STAMP)
        self.assertEqual(event.type, "task.completed")

    def test_refused_a_changed_body_another_secret_a_stale_or_future_time_and_missing_headers(self) -> None:
        wrong_secret = "whsec_" + base64.b64encode(os.urandom(24)).decode()
        cases = {
            "changed body": (BODY.replace("t-1", "t-2"), headers(), SECRET, STAMP),
            "another secret": (BODY, headers(), wrong_secret, STAMP),
            "over 5 minutes old": (BODY, headers(), SECRET, STAMP + 301),
            "over 5 minutes ahead": (BODY, headers(), SECRET, STAMP - 301),
            "no signature": (BODY, {"webhook-id": ID, "webhook-timestamp": str(STAMP)}, SECRET, STAMP),
            "a v2 signature": (BODY, headers(SIGNATURE.replace("v1,", "v2,")), SECRET, STAMP),
            "signed for another time": (BODY, headers(stamp=STAMP + 1), SECRET, STAMP),
        }
        for name, (body, sent, secret, now) in cases.items():
            with self.subTest(name), self.assertRaises(WebhookVerificationError):
                verify_webhook(body, sent, secret, now=now)

    def test_within_the_tolerance_either_way_it_verifies(self) -> None:
        for now in (STAMP - 300, STAMP + 300):
            with self.subTest(now=now):
                self.assertEqual(verify_webhook(BODY, headers(), SECRET, now=now).type, "task.completed")


if __name__ == "__main__":
    unittest.main()
