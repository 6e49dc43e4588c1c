"""Live code under ``mkdocs serve``: ``install`` wraps the WSGI app of
MkDocs' own server (no second server, port or cross-origin request):
``POST <site>/__live__/run`` runs an edit (``live.Live``), and each HTML
page sent gets the live-code script and a token for this serve (nothing
is written to the site: a static build has no trace of it).

Any page a user visits can send requests to 127.0.0.1, so: loopback
addresses only; the ``Host`` must name it (DNS rebinding); the
``Origin`` must be the site and ``Sec-Fetch-Site``, if sent,
same-origin; the token must come in a header no form can send and no
other origin read (no CORS header, ever). Another account on the
machine can reach 127.0.0.1 and read the token: on Linux its
connections are closed unread (``connection_owner``).

``python -m lessonbuild.liveserve present`` (``make present``) serves
the site and opens the deck in the browser.
"""

from __future__ import annotations

import argparse
import hmac
import io
import ipaddress
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
import webbrowser
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path

from .deck import read_deck, sections
from .live import Live, Refused, Verified, wait_until

log = logging.getLogger("mkdocs.plugins.lesson.live")
ENDPOINT = "__live__/run"  # under the site's mount path
TOKEN_HEADER = "X-Lesson-Live-Token"
MAX_BODY = 256 * 1024  # bytes of a request (the code and shown code)


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def connection_owner(client: tuple, server: tuple) -> int | None:
    """The uid owning the client's end of the TCP connection ``client``
    -> ``server`` ((host, port) each) in /proc/net; None if not told."""
    want = tuple((_ip(end[0]), end[1]) for end in (client, server))
    for table in ("tcp", "tcp6"):
        try:
            lines = Path("/proc/net", table).read_text().splitlines()[1:]
        except OSError:
            continue
        for fields in map(str.split, lines):  # sl local remote st ... uid
            if tuple(map(_address, fields[1:3])) == want:
                return int(fields[7])
    return None


def _ip(address: str | bytes):
    """An address (text or packed), an IPv4 one mapped into IPv6 as IPv4."""
    address = ipaddress.ip_address(address)
    return getattr(address, "ipv4_mapped", None) or address


def _address(field: str) -> tuple:
    """``0100007F:1F40`` (/proc/net/tcp: each 32-bit word in host order,
    little-endian here) as (address, port)."""
    hexed, port = field.split(":")
    raw = b"".join(
        bytes.fromhex(hexed[i : i + 8])[::-1] for i in range(0, len(hexed), 8)
    )
    return _ip(raw), int(port, 16)


class LiveServe:
    """The checks and the injection for one serve (one token)."""

    def __init__(self, live: Live, host: str, port: int, mount_path: str):
        self.live = live
        self.token = secrets.token_urlsafe(32)
        self.mount = mount_path.rstrip("/") + "/"
        self.endpoint = self.mount + ENDPOINT
        names = {host, "localhost", {"localhost": "127.0.0.1"}.get(host, host)}
        names = {f"[{n}]" if ":" in n else n for n in names}
        self.hosts = {f"{name}:{port}" for name in names}
        self.origins = {f"http://{h}" for h in self.hosts}

    def inject(self, html: bytes) -> bytes:
        """The live-code configuration, style and script before ``</head>``."""
        config = json.dumps({"endpoint": self.endpoint, "token": self.token})
        snippet = (
            '<script type="application/json" id="lesson-live-config">'
            + config.replace("<", "\\u003c")
            + "</script>"
            f'<link rel="stylesheet" href="{self.mount}assets/live.css">'
            f'<script type="module" src="{self.mount}assets/live.js">'
            "</script>"
        )
        return html.replace(b"</head>", snippet.encode() + b"</head>", 1)

    def wrap(self, app: Callable) -> Callable:
        """``app`` (MkDocs' server), the endpoint, the pages injected."""

        def application(environ, start_response):
            path = environ.get("PATH_INFO", "")
            if path == self.endpoint:
                return self._endpoint(environ, start_response)
            if path.startswith("/livereload/"):
                return app(environ, start_response)  # a long poll: as is
            return self._page(app, environ, start_response)

        return application

    def _page(self, app, environ, start_response):
        got = {}

        def capture(status, headers, exc_info=None):
            got["status"], got["headers"] = status, headers
            return lambda data: None

        body = app(environ, capture)
        status, headers = got["status"], got["headers"]
        kind = next((v for k, v in headers if k.lower() == "content-type"), "")
        if (
            not status.startswith("200")
            or not kind.startswith("text/html")
            or environ.get("HTTP_HOST") not in self.hosts
        ):
            start_response(status, headers)
            return body
        try:
            html = self.inject(b"".join(body))
        finally:
            if hasattr(body, "close"):
                body.close()
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
        start_response(status, [*headers, ("Content-Length", str(len(html)))])
        return [html]

    def refusal(self, environ) -> tuple[int, str] | None:
        """(status, why) if this request may not run code, else None."""
        not_ours = "refused: the request does not come from this site"
        token = environ.get("HTTP_" + TOKEN_HEADER.upper().replace("-", "_"))
        if environ.get("REQUEST_METHOD") != "POST":
            return 405, "only POST runs code"
        if environ.get("HTTP_HOST") not in self.hosts:
            return 403, "refused: this server answers only for its own address"
        if environ.get("HTTP_ORIGIN") not in self.origins:
            return 403, not_ours
        if environ.get("HTTP_SEC_FETCH_SITE", "same-origin") != "same-origin":
            return 403, not_ours
        if not token or not hmac.compare_digest(
            token.encode(), self.token.encode()
        ):
            return 403, "refused: no valid token (reload the page)"
        if not environ.get("CONTENT_TYPE", "").startswith("application/json"):
            return 415, "expected application/json"
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if not 0 < length <= MAX_BODY:
            return 413, f"a request holds at most {MAX_BODY} bytes"
        return None

    def _endpoint(self, environ, start_response):
        status, message = self.refusal(environ) or (200, "")
        data = {"ok": False, "message": message}
        if status == 200:
            try:
                length = int(environ["CONTENT_LENGTH"])
                request = json.loads(environ["wsgi.input"].read(length))
                data = self.live.run(request)
            except (ValueError, RecursionError):  # (200 KB of "[": 500)
                status, data["message"] = 400, "expected JSON"
            except Refused as exc:
                status, data["message"] = exc.status, str(exc)
        body = json.dumps(data).encode()
        start_response(
            f"{status} {HTTPStatus(status).phrase}",
            [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(body))),
                ("Cache-Control", "no-store"),
                ("X-Content-Type-Options", "nosniff"),
            ],
        )
        return [body]


def install(server, config, verified: Callable[[], Verified]):
    """The ``LiveServe`` installed on MkDocs' ``server`` (``on_serve``),
    or None where it serves on an address other machines can reach."""
    addr = getattr(config, "dev_addr", None)
    if addr is None or not hasattr(server, "set_app"):
        return None  # not MkDocs' development server
    host, port = addr
    if not is_loopback(host):
        log.info(
            f"live code is off: the site is served on {host}, not on a "
            "loopback address such as 127.0.0.1"
        )
        return None
    root = Path(config.config_file_path).resolve().parent
    serve = LiveServe(Live(root, verified), host, port, server.mount_path)
    server.set_app(serve.wrap(server.get_app()))
    ours = server.verify_request  # socketserver's access-control hook

    def verify_request(request, client_address) -> bool:
        owner = connection_owner(client_address, request.getsockname())
        if owner not in (None, os.getuid()):
            log.warning(
                f"closed a connection from user {owner}: while live code "
                "is on, this server answers only its own user"
            )
            return False
        return ours(request, client_address)

    server.verify_request = verify_request
    return serve


#: make bench's Run to output, median, of a one-line change of slide 15.
TARGET_SECONDS = 0.150


def run_to_output(root: Path, runs: int = 11) -> list[float]:
    """Seconds from POST to answer through the endpoint (the real
    ``Live``), of slide 15's first snippet with a line added; not the
    first run, which waits for the fork server's import."""
    root = Path(root).resolve()
    deck = read_deck(root, root / "docs")
    slide = next(s for s in deck.slides if s.number == 15)
    include = next(i for i in slide.includes if i.path.startswith("snippets/"))
    lines = (root / include.path).read_text(encoding="utf-8").splitlines()
    first, end = sections(lines)[include.section]
    shown = "\n".join(lines[first:end])
    live = Live(root, lambda: Verified(deck, None))
    serve = LiveServe(live, "127.0.0.1", 8000, "/")
    app = serve.wrap(lambda environ, start_response: [])
    times = []
    try:
        for n in range(runs + 1):
            code = f"{shown.rstrip()}\nprint('run {n}')"
            body = json.dumps(
                {"path": include.path, "shown": shown, "code": code}
            ).encode()
            environ = {
                "REQUEST_METHOD": "POST",
                "PATH_INFO": serve.endpoint,
                "HTTP_HOST": "127.0.0.1:8000",
                "HTTP_ORIGIN": "http://127.0.0.1:8000",
                "HTTP_X_LESSON_LIVE_TOKEN": serve.token,
                "CONTENT_TYPE": "application/json",
                "CONTENT_LENGTH": str(len(body)),
                "wsgi.input": io.BytesIO(body),
            }
            start = time.perf_counter()
            answer = json.loads(b"".join(app(environ, lambda *args: None)))
            times.append(time.perf_counter() - start)
            if not answer.get("ok"):
                raise RuntimeError(f"a live run failed: {answer}")
    finally:
        live.close()
    return times[1:]


def present(argv: list[str] | None = None) -> int:
    """Serve the site (as ``make serve``) and open the deck in the browser."""
    parser = argparse.ArgumentParser(prog="python -m lessonbuild.liveserve")
    parser.add_argument("command", choices=["present"])
    parser.add_argument("--addr", default="127.0.0.1:8000")
    args = parser.parse_args(argv)
    url = f"http://{args.addr}/present.html"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "serve", "--dirty", "-a", args.addr]
    )

    def up() -> bool:
        if proc.poll() is not None:
            return True
        try:
            with urllib.request.urlopen(url, timeout=2):
                return True
        except OSError:
            return False

    # SIGTERM raises KeyboardInterrupt, and so the server stops with us.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        if wait_until(up, 600) and proc.poll() is None:
            print(f"Presenting {url}", file=sys.stderr)
            webbrowser.open(url)
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        return proc.wait()


if __name__ == "__main__":
    sys.exit(present())
