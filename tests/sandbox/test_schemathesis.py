"""Property-based run of the whole OpenAPI document (schemathesis, positive and negative
data), gateway, browser-wallet and admin routes alike: whatever is sent, the sandbox never
answers 5xx, every error is one gateway error object, and no body names a Python exception.
"""

from __future__ import annotations

import re
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from sandbox_fixtures import AUTH_HEADERS
from walletctl.sandbox.app import create_app
from walletctl.sandbox.config import FaultConfig, SandboxConfig

APP = create_app(SandboxConfig(quiet=True, allow_clock_control=True))
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)

# Names a Python traceback or exception repr would leak (the gateway's own descriptions,
# e.g. GeneralValidationError, are not among them).
PYTHON_NAMES = re.compile(
    r"\b(Traceback|RecursionError|InvalidOperation|ValueError|TypeError|KeyError|IndexError|"
    r"AttributeError|UnicodeDecodeError|OverflowError|JSONDecodeError|ZeroDivisionError|"
    r"AssertionError|RuntimeError|ValidationError|DecimalException|MemoryError)\b"
)


# Everything any case has sent so far: the demo routes store and echo what they are given,
# so a generated string such as "ValidationError" may come back in a later answer. A name
# counts as leaked only if no request ever carried it.
SENT: list[str] = []


def leaked_names(text: str) -> set[str]:
    return {name for name in PYTHON_NAMES.findall(text)
            if not any(name in sent for sent in SENT)}


def check_answer(status: int, text: str, body: Any, where: str) -> None:
    assert status < 500, (where, status, text[:300])
    assert not leaked_names(text), (where, text[:300])
    if status >= 400 and isinstance(body, dict):
        assert set(body) == {"code", "description", "details"}, (where, body)
        assert isinstance(body["details"], dict), (where, body)
        assert isinstance(body["details"].get("message"), str), (where, body)


@schema.parametrize()
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: Any) -> None:
    SENT.append(repr((case.path_parameters, case.query, case.headers, case.cookies, case.body)))
    response = case.call(headers=AUTH_HEADERS)
    if case.path == "/_sandbox/faults" and case.method == "POST":
        APP.state.ctx.faults = FaultConfig()  # faults are deliberate 5xx: never keep them
    try:
        body = response.json()
    except ValueError:
        body = None
    check_answer(response.status_code, response.text, body, f"{case.method} {case.path}")
    if response.status_code >= 400 and case.path not in ("/pay/{token}", "/pay/3ds/{challenge_id}"):
        # the hosted page answers a person: its errors are HTML message pages (documented
        # as text/html in the document); every other error is the gateway error object
        assert isinstance(body, dict), (case.method, case.path, response.text[:300])
    # the answer is what the document says: a declared status, content type and schema
    case.validate_response(response, checks=[status_code_conformance,
                                             content_type_conformance,
                                             response_schema_conformance])


def test_an_echoed_name_is_not_a_leak() -> None:
    SENT.append('{"code": "ValidationError"}')
    try:
        assert leaked_names('{"results": [{"code": "ValidationError"}]}') == set()
        assert leaked_names('{"description": "KeyError: x"}') == {"KeyError"}
    finally:
        SENT.pop()
