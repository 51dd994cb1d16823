"""Property-based run of the OpenAPI document (schemathesis, positive and negative data):
whatever is sent, the sandbox never answers 5xx and always answers a gateway error object."""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings

from sandbox_fixtures import AUTH_HEADERS
from walletctl.sandbox.app import create_app
from walletctl.sandbox.config import SandboxConfig

APP = create_app(SandboxConfig(quiet=True))
# Control routes that change the sandbox itself (faults would turn answers into 5xx on
# purpose) are left out; everything else, including the browser-wallet routes, is fuzzed.
schema = (
    schemathesis.openapi.from_asgi("/openapi.json", APP)
    .exclude(path_regex=r"^/_sandbox/(faults|clock|reset)$", method="POST")
)


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case: Any) -> None:
    response = case.call(headers=AUTH_HEADERS)
    assert response.status_code < 500, (case.method, case.path, response.text)
    if response.status_code >= 400 and case.path.startswith("/api/v5/"):
        body = response.json()
        assert set(body) == {"code", "description", "details"}, body
