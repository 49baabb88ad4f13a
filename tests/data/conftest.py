"""A local HTTP server that plays the datasets' sources (files under ``HOST/PATH``, as a mirror holds them),
and a sandbox: an empty writable data root and cache, downloads through the local server only."""

from __future__ import annotations

import gzip
import shutil
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@dataclass
class Server:
    """What the server serves: ``files`` (URL path without the leading / -> bytes); a path in ``cut`` is
    sent half and the connection closed; anything else answers 404. ``hits`` counts the requests."""

    url: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    cut: set[str] = field(default_factory=set)
    hits: list[str] = field(default_factory=list)

    def serve(self, url: str, data: bytes) -> None:
        self.files[url.split("://", 1)[1]] = data


def _handler(state: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.lstrip("/")
            state.hits.append(path)
            data = state.files.get(path)
            if data is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if path in state.cut:
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def server():
    state = Server()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def sandbox(tmp_path, monkeypatch, server) -> Path:
    """EMBTIE_DATA: an empty writable folder; EMBTIE_CACHE: a fresh cache; every download from the local
    server (``EMBTIE_DATA_MIRROR``). Returns the data root."""
    root = tmp_path / "data"
    root.mkdir()
    monkeypatch.setenv("EMBTIE_DATA", str(root))
    monkeypatch.setenv("EMBTIE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("EMBTIE_DATA_MIRROR", server.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    shutil.copytree(SHARED / "wordsim", root / "wordsim", ignore=shutil.ignore_patterns("SOURCE.md"))
    (root / "wordsim").chmod(0o755)
    return root


def source_bytes(relpath: str, derive: str) -> bytes:
    """The bytes a source serves, rebuilt from its copy in ../shared/data (a copy, or the gunzipped file)."""
    data = (SHARED / relpath).read_bytes()
    return gzip.decompress(data) if derive in ("gzip-9n", "gzip-ptb-train") else data


def serve_shared(server: Server, name: str, splits: tuple[str, ...] = ("train", "valid")) -> None:
    """Serve the sources of ``name``'s ``splits`` that ../shared/data holds (or rebuilds exactly)."""
    from embtie.data import catalogue

    for e in catalogue.dataset(name).entries_of(list(splits)):
        assert e.source is not None
        server.serve(e.source.url, source_bytes(e.relpath, e.derive))
