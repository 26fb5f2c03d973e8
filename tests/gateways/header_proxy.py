"""A real HTTP reverse proxy that drops named request headers (as some gateways in front of an agent do),
streaming responses through unchanged. For tests only: it must only ever bind loopback.
"""

from __future__ import annotations

import argparse

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding"}


def build_app(upstream: str, drop: list[str]) -> Starlette:
    client = httpx.AsyncClient(base_url=upstream, timeout=None)
    dropped = {name.lower() for name in drop} | HOP_HEADERS

    async def forward(request: Request) -> StreamingResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in dropped}
        body = await request.body()
        outgoing = client.build_request(
            request.method, request.url.path, params=request.query_params, headers=headers, content=body
        )
        response = await client.send(outgoing, stream=True)
        kept = {k: v for k, v in response.headers.items() if k.lower() not in HOP_HEADERS}
        return StreamingResponse(
            response.aiter_raw(), response.status_code, kept, background=BackgroundTask(response.aclose)
        )

    routes = [
        Route("/proxy-health", lambda _request: JSONResponse({"ok": True})),
        Route("/{path:path}", forward, methods=["GET", "POST", "DELETE"]),
    ]
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="e.g. http://127.0.0.1:8000")
    parser.add_argument("--drop", action="append", default=[], help="request header to drop (repeatable)")
    args = parser.parse_args()
    app = build_app(args.upstream, args.drop)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
