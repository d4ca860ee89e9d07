"""An https image server on 127.0.0.1 with a throwaway self-signed certificate, for the image-fetch tests.

The certificate names `images.test` and 127.0.0.1, so a client that connects to the pinned IP yet verifies the
host name proves SNI and Host were kept. Routes:

- ``/ok.png``: a small PNG; ``/page``: text/html; ``/vector``: image/svg+xml
- ``/big``: image/png streamed in chunks with no Content-Length, ``?mb=`` megabytes (default 16)
- ``/declared-big``: image/png with a Content-Length of 20 MB (the body never comes)
- ``/stall``: headers, then nothing until the server stops
- ``/redirect?to=<url>``: 302 to ``<url>``; ``/loop?n=<k>``: 302 to ``/loop?n=<k+1>``
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.fakes.fake_gemini_api import QuietHandler

HOST_NAME = "images.test"
PNG = b"\x89PNG\r\n\x1a\n" + b"fake png body " * 8
_CHUNK = 64 * 1024


def self_signed(directory: Path) -> tuple[Path, Path, bytes]:
    """Write a key and certificate for HOST_NAME and 127.0.0.1; return their paths and the certificate PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST_NAME)])
    now = datetime.datetime.now(datetime.UTC)
    san = x509.SubjectAlternativeName([x509.DNSName(HOST_NAME), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(san, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    key_path, cert_path = directory / "key.pem", directory / "cert.pem"
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    cert_path.write_bytes(pem)
    return key_path, cert_path, pem


class _Handler(QuietHandler):
    server: _Server

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        self.server.seen.append((url.path, self.headers.get("Host", "")))
        try:
            self._route(url.path, query)
        except OSError:
            self.close_connection = True

    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _route(self, path: str, query: dict[str, list[str]]) -> None:
        if path == "/ok.png":
            self._send(200, PNG, "image/png")
        elif path == "/page":
            self._send(200, b"<html>not an image</html>", "text/html; charset=utf-8")
        elif path == "/vector":
            self._send(200, b"<svg xmlns='http://www.w3.org/2000/svg'/>", "image/svg+xml")
        elif path == "/redirect":
            self._send(302, b"", "text/plain", {"Location": query["to"][0]})
        elif path == "/loop":
            n = int(query.get("n", ["0"])[0])
            self._send(302, b"", "text/plain", {"Location": f"/loop?n={n + 1}"})
        elif path == "/big":
            self._stream_big(int(query.get("mb", ["16"])[0]))
        elif path == "/declared-big":
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(20 * 1024 * 1024))
            self.end_headers()
            self.server.stopping.wait()
            self.close_connection = True
        elif path == "/stall":
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.server.stopping.wait()
            self.close_connection = True
        else:
            self._send(404, b"no such route", "text/plain")

    def _stream_big(self, megabytes: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        block = b"\0" * _CHUNK
        for _ in range(megabytes * 1024 * 1024 // _CHUNK):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))
        self.wfile.write(b"0\r\n\r\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context
        self.seen: list[tuple[str, str]] = []
        self.stopping = threading.Event()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        self.socket.bind(self.server_address)  # skip getfqdn(): no reverse DNS lookup
        self.server_address = self.socket.getsockname()

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = self.socket.accept()
        return self.context.wrap_socket(sock, server_side=True), addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class HttpsImageServer:
    """``with HttpsImageServer(tmp_path) as server:`` serves until the block ends; ``client_context`` trusts it."""

    def __init__(self, directory: Path) -> None:
        key_path, cert_path, pem = self_signed(directory)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_path, key_path)
        self.client_context = ssl.create_default_context(cadata=pem.decode())
        self._server = _Server(context)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def seen(self) -> list[tuple[str, str]]:
        """(path, Host header) of every request served, oldest first."""
        return list(self._server.seen)

    def url(self, path: str, host: str = HOST_NAME) -> str:
        return f"https://{host}:{self.port}{path}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(2.0)
