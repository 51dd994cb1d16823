"""The sandbox's OpenAPI document: request/response schemas from the shared models, the
gateway error object, the ``PublicApiKey`` security scheme, declared path parameters."""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from walletctl.models.checkout import CheckoutRequest, CheckoutResponse
from walletctl.models.followup import FollowUpRequest
from walletctl.sandbox import outcome

_SCHEMA_REF = "#/components/schemas/{model}"

_ERROR_SCHEMA = {
    "type": "object",
    "required": ["code", "description", "details"],
    "properties": {
        "code": {"type": "string"},
        "description": {"type": "string"},
        "details": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    },
}


def errors_doc(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {
        s: {
            "description": outcome.error_body(s, "")["description"],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
        for s in statuses
    }


def body_doc(model: str) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model}"}}
            },
        },
        "security": [{"PublicApiKey": []}],
    }


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document of ``app`` (built once): routes plus the shared models' schemas,
    the error object and the ``PublicApiKey`` scheme."""
    if app.openapi_schema:
        return app.openapi_schema
    doc = get_openapi(title=app.title, version=app.version, description=app.description,
                      routes=app.routes)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    from walletctl.models.followup import FollowUpResponse
    from walletctl.models.records import TransactionRecord

    for model in (CheckoutRequest, FollowUpRequest, CheckoutResponse, FollowUpResponse,
                  TransactionRecord):
        schema = model.model_json_schema(by_alias=True, ref_template=_SCHEMA_REF)
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    schemas["Error"] = _ERROR_SCHEMA
    doc["components"].setdefault("securitySchemes", {})["PublicApiKey"] = {
        "type": "apiKey",
        "in": "header",
        "name": "Authorization",
        "description": "`PublicApiKey <key>`; the sandbox's static key is sandbox-api-key",
    }
    _declare_path_parameters(doc)
    app.openapi_schema = doc
    return doc


def _declare_path_parameters(doc: dict[str, Any]) -> None:
    """Declare every ``{name}`` of a path template (routes that read ``Request`` directly
    leave them out, which makes the document invalid for tools like schemathesis)."""
    for path, item in doc.get("paths", {}).items():
        names = re.findall(r"{([^}:]+)(?::[^}]*)?}", path)
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            params = operation.setdefault("parameters", [])
            have = {(p.get("name"), p.get("in")) for p in params if isinstance(p, dict)}
            for name in names:
                if (name, "path") not in have:
                    params.append({"name": name, "in": "path", "required": True,
                                   "schema": {"type": "string"}})
