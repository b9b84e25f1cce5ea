"""The web app: its page at `/` and the assets shipped with the package (no CDN, no path from a request)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse

from hyperfolio.server.problems import Problem

router = APIRouter(include_in_schema=False)


@router.get("/")
def index() -> HTMLResponse:
    return HTMLResponse(_static("index.html").read_text(encoding="utf-8"))


@router.get("/static/{asset}")
def static(asset: str) -> FileResponse:
    if asset == "vis-network.min.js":
        return FileResponse(_vis_network(), media_type="text/javascript")
    shipped = {p.name for p in _assets().iterdir()}
    if asset not in shipped:  # only the files shipped with the package, never a path from the request
        raise Problem(404, f"no such asset: {asset}")
    return FileResponse(_static(asset))


def _assets() -> Path:
    return Path(str(resources.files("hyperfolio.server").joinpath("static")))


def _static(name: str) -> Path:
    return _assets() / name


def _vis_network() -> Path:
    return Path(str(resources.files("hyperfolio.viz").joinpath("assets", "vis-network.min.js")))
