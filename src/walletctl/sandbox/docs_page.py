"""``GET /docs``: the interactive API page, served entirely by the sandbox (works offline).

The Swagger UI script, style sheet and icon come from the ``swagger-ui-bundle`` Python
package and are served under ``/docs/assets/``; nothing is loaded from a CDN. Only the three
files the page uses are served (a fixed list, never a path from the request).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, Response

from walletctl.sandbox.replies import SandboxError

ASSETS = {
    "swagger-ui-bundle.js": "application/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}


def install(app: FastAPI) -> None:
    """Add ``/docs`` and ``/docs/assets/{name}`` to ``app``."""

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Response:
        return get_swagger_ui_html(
            openapi_url="/openapi.json", title=f"{app.title} - API",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon-32x32.png",
        )

    @app.get("/docs/assets/{name}", include_in_schema=False)
    async def asset(name: str) -> Response:
        if name not in ASSETS:
            raise SandboxError(404, "name: not a file of the API page", description="NotFound",
                               code="GEN-404")
        from swagger_ui_bundle import swagger_ui_path  # a declared dependency

        return FileResponse(Path(str(swagger_ui_path)) / name, media_type=ASSETS[name],
                            headers={"Cache-Control": "public, max-age=86400"})

