"""The client kept in step with the API: docs/openapi.json (written by `npm run openapi` from contract/)
against the package's operation table, method signatures and answer dataclasses.

An operation added to the API fails here until it has a method (``OPERATIONS``) or a reason why an API
key cannot call it (``NOT_FOR_API_KEYS``); so does a request property or query parameter a method does
not take, and an answer property its dataclass lacks.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
import unittest
from pathlib import Path
from typing import Any

from generation_service import client as client_module
from generation_service.client import NOT_FOR_API_KEYS, OPERATIONS, Client
from generation_service.models import WEBHOOK_DATA, camel_case, snake_case

DOCUMENT_PATH = Path(__file__).resolve().parents[3] / "docs" / "openapi.json"
DOCUMENT: dict[str, Any] = json.loads(DOCUMENT_PATH.read_text(encoding="utf-8"))
HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def document_operations() -> dict[str, tuple[str, str, dict[str, Any]]]:
    """operationId -> (HTTP method, path, operation) for every operation of the document."""
    found: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for path, item in DOCUMENT["paths"].items():
        for method in HTTP_METHODS:
            if method in item:
                found[item[method]["operationId"]] = (method.upper(), path, item[method])
    return found


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = DOCUMENT["components"]["schemas"][name]
    return schema


def properties(schema: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The properties a JSON object of this schema may have (every branch of oneOf, all of allOf), and
    the ones it always has."""
    schema = resolve(schema)
    props: dict[str, Any] = dict(schema.get("properties", {}))
    required: set[str] = set(schema.get("required", []))
    if "allOf" in schema:
        for part in schema["allOf"]:
            more, needed = properties(part)
            props.update(more)
            required |= needed
    if "oneOf" in schema:
        branches = [properties(part) for part in schema["oneOf"] if resolve(part).get("type") != "null"]
        for more, _ in branches:
            for name, value in more.items():
                props.setdefault(name, value)
        required |= set.intersection(*(needed for _, needed in branches)) if branches else set()
    return props, required


def nested_class(hint: Any) -> tuple[type | None, bool]:
    """The dataclass a field holds (directly, in a list, or optional), and whether it is a list of it."""
    origin = typing.get_origin(hint)
    args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    if origin is list and args:
        inner, _ = nested_class(args[0])
        return inner, True
    if origin is not None and len(args) == 1:
        return nested_class(args[0])
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint, False
    return None, False


def answer_mismatches(cls: type, schema: dict[str, Any], where: str) -> list[str]:
    """What differs between a dataclass and the schema of the JSON it is built from (recursively)."""
    props, required = properties(schema)
    hints = typing.get_type_hints(cls)
    fields = {camel_case(spec.name): spec.name for spec in dataclasses.fields(cls) if spec.name != "raw"}
    name = cls.__name__
    problems = [f"{where}: property {p} has no field {snake_case(p)} in {name}" for p in props if p not in fields]
    problems += [f"{where}: required property {p} has no field in {name}" for p in required if p not in fields]
    # An object the document leaves open (no properties) may be read field by field as the API sends it.
    if props:
        invented = [field for p, field in fields.items() if p not in props]
        problems += [f"{where}: {name}.{field} is no property of the answer" for field in invented]
    for json_name, field in fields.items():
        inner, is_list = nested_class(hints[field])
        if inner is None or json_name not in props:
            continue
        sub = resolve(props[json_name])
        if is_list:
            sub = resolve(sub.get("items", {}))
        problems += answer_mismatches(inner, sub, f"{where}.{json_name}")
    return problems


def effective_security(operation: dict[str, Any]) -> list[str]:
    requirements = operation.get("security", DOCUMENT.get("security", []))
    return sorted({name for requirement in requirements for name in requirement})


class OperationsTest(unittest.TestCase):
    def test_every_operation_of_the_document_has_a_method_or_a_reason_why_not(self) -> None:
        # Prepare
        in_document = set(document_operations())

        # Act
        unclassified = in_document - set(OPERATIONS) - set(NOT_FOR_API_KEYS)
        stale = (set(OPERATIONS) | set(NOT_FOR_API_KEYS)) - in_document

        # Assert
        self.assertEqual(
            unclassified,
            set(),
            f"{DOCUMENT_PATH} has operations the Python client does not know: give each a method and an "
            "OPERATIONS entry (client/python/generation_service/client.py), or, if an API key cannot call "
            "it, a NOT_FOR_API_KEYS entry saying why",
        )
        self.assertEqual(stale, set(), "OPERATIONS or NOT_FOR_API_KEYS name operations the document no longer has")
        self.assertEqual(set(OPERATIONS) & set(NOT_FOR_API_KEYS), set())

    def test_each_method_calls_its_operation_and_an_api_key_may(self) -> None:
        operations = document_operations()
        for operation_id, entry in OPERATIONS.items():
            with self.subTest(operation_id):
                method, path, operation = operations[operation_id]
                self.assertEqual((entry.http_method, entry.path), (method, path))
                self.assertTrue(callable(getattr(Client, entry.method, None)), f"Client has no {entry.method}")
                self.assertIn("bearerKey", effective_security(operation))

    def test_excluded_operations_say_why_and_none_is_open_to_a_key_only(self) -> None:
        operations = document_operations()
        for operation_id, reason in NOT_FOR_API_KEYS.items():
            with self.subTest(operation_id):
                self.assertGreater(len(reason), 20)
                # An operation only a key can call is a consumer operation: it cannot be excluded.
                self.assertNotEqual(effective_security(operations[operation_id][2]), ["bearerKey"])

    def test_every_request_property_and_parameter_is_a_parameter_of_the_method(self) -> None:
        operations = document_operations()
        for operation_id, entry in OPERATIONS.items():
            with self.subTest(operation_id):
                _, _, operation = operations[operation_id]
                signature = inspect.signature(getattr(Client, entry.method))
                accepted = {name: parameter for name, parameter in signature.parameters.items() if name != "self"}
                expected: dict[str, bool] = {}  # Python name -> required
                schema = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
                if schema:
                    props, required = properties(schema)
                    expected.update({snake_case(name): name in required for name in props})
                path_parameters = [p for p in operation.get("parameters", []) if p["in"] == "path"]
                for parameter in operation.get("parameters", []):
                    if parameter["in"] == "query":
                        expected[snake_case(parameter["name"])] = bool(parameter.get("required"))
                    elif parameter["in"] == "header":
                        expected[parameter["name"].lower().replace("-", "_")] = bool(parameter.get("required"))
                positional = [
                    name for name, p in accepted.items() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
                ]
                keywords = {name: p for name, p in accepted.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}

                self.assertEqual(len(positional), len(path_parameters), "one positional argument per path parameter")
                for name, needed in expected.items():
                    self.assertTrue(name in keywords, f"{entry.method} does not take {name}")
                    has_default = keywords[name].default is not inspect.Parameter.empty
                    self.assertEqual(not has_default, needed, f"{entry.method}({name}) required: {needed}")
                unknown = set(keywords) - set(expected) - self._not_yet_in_document(operation_id)
                self.assertEqual(unknown, set(), f"{entry.method} takes what the API does not")

    @staticmethod
    def _not_yet_in_document(operation_id: str) -> set[str]:
        # get_task's `wait` is pre-wired for wait-on-read, refused until SERVER_WAIT_MAX_SECONDS is set.
        return {"wait"} if operation_id == "getTask" and client_module.SERVER_WAIT_MAX_SECONDS is None else set()

    def test_wait_on_read_is_used_exactly_when_the_document_has_it(self) -> None:
        _, _, operation = document_operations()["getTask"]
        has_wait = any(p["in"] == "query" and p["name"] == "wait" for p in operation.get("parameters", []))
        self.assertEqual(
            client_module.SERVER_WAIT_MAX_SECONDS is not None,
            has_wait,
            "GET /api/ai/tasks/{id} has a `wait` parameter now: set SERVER_WAIT_MAX_SECONDS in client.py to "
            "its maximum, so Client.wait holds reads open instead of polling",
        )


class AnswersTest(unittest.TestCase):
    def test_each_answer_dataclass_has_every_property_of_its_schema(self) -> None:
        operations = document_operations()
        for operation_id, entry in OPERATIONS.items():
            with self.subTest(operation_id):
                _, _, operation = operations[operation_id]
                success = [code for code in operation["responses"] if code.startswith("2")]
                # A submit's 200 answers only `Prefer: wait`, which this client does not send: its answer is the 202.
                if success == ["200", "202"] and operation_id in ("submitImage", "submitVideo"):
                    success = ["202"]
                self.assertEqual(len(success), 1)
                if entry.answer is type(None):
                    # 204 No Content: nothing to model.
                    self.assertEqual(success, ["204"])
                    self.assertNotIn("content", operation["responses"]["204"])
                    continue
                schema = operation["responses"][success[0]]["content"]["application/json"]["schema"]
                self.assertEqual(answer_mismatches(entry.answer, schema, operation_id), [])

    def test_every_webhook_event_type_has_its_data_class(self) -> None:
        documented: set[str] = set()
        for name, webhook in DOCUMENT.get("webhooks", {}).items():
            schema = webhook["post"]["requestBody"]["content"]["application/json"]["schema"]
            props, _ = properties(schema)
            for event_type in props["type"]["enum"]:
                documented.add(event_type)
                with self.subTest(event_type):
                    self.assertIn(event_type, WEBHOOK_DATA, f"webhook {name}: no data class for {event_type}")
                    self.assertEqual(answer_mismatches(WEBHOOK_DATA[event_type], props["data"], event_type), [])
        self.assertEqual(set(WEBHOOK_DATA) - documented, set(), "WEBHOOK_DATA names types the API no longer sends")


if __name__ == "__main__":
    unittest.main()
