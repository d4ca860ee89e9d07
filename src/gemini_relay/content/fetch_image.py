"""Fetch a reference image by URL without letting the URL reach inside the machine or its network (SSRF).

Every hop is checked the same way: https only, no credentials in the URL, the host resolved once and every
resolved address checked by the address policy, then the connection made to the checked address itself (so a
second DNS answer cannot swap in another address), with TLS still verified against the host name (SNI and Host
kept). Redirects are followed by hand, at most `MAX_REDIRECTS`, each one checked anew. Each hop has its own time
budget; the body must be `image/*` (not SVG, which is a scriptable document) and is capped while it streams, never
trusting Content-Length alone.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urljoin, urlsplit, urlunsplit

import anyio

from gemini_relay.errors import InputError

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "HOP_TIMEOUT",
    "MAX_IMAGE_BYTES",
    "MAX_REDIRECTS",
    "AddressPolicy",
    "FetchedImage",
    "ImageFetchError",
    "IpAddress",
    "Resolver",
    "fetch_image",
    "public_only",
    "system_resolver",
]

MAX_IMAGE_BYTES = 15 * 1024 * 1024
MAX_REDIRECTS = 5
HOP_TIMEOUT = 10.0  # seconds for one hop: connect, TLS, headers and the whole body
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_URL_SHOWN = 200  # a URL in a message is the caller's own, but never unbounded

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]
"""`(host, port) -> addresses`: every address the name resolves to, as strings."""
AddressPolicy = Callable[[IpAddress], str | None]
"""`address -> None` when a connection may go there, else the reason it may not (e.g. "a loopback address")."""

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")


class ImageFetchError(InputError):
    """The image URL was refused or could not be fetched; the message names the URL and the rule."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        shown = url if len(url) <= _URL_SHOWN else url[:_URL_SHOWN] + "…"
        super().__init__(f"Refusing image URL {shown}: {reason}")


@dataclass(frozen=True)
class FetchedImage:
    data: bytes
    mime_type: str
    url: str  # the final URL, after redirects


def _category(addr: IpAddress) -> str | None:
    """Why `addr` is not public, as its kind (IPv4 has no site-local range), or None for a public address."""
    checks = (
        (addr.is_unspecified, "an unspecified address"),
        (addr.is_loopback, "a loopback address"),
        (addr.is_link_local, "a link-local address"),
        (addr.is_multicast, "a multicast address"),
        (isinstance(addr, ipaddress.IPv6Address) and addr.is_site_local, "a site-local address"),
        (addr.is_reserved, "a reserved address"),
        (addr.is_private, "a private address"),
        (not addr.is_global, "not a public address"),  # e.g. 100.64.0.0/10 (carrier-grade NAT)
    )
    return next((reason for hit, reason in checks if hit), None)


def _embedded_v4(addr: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 form carries (mapped, compatible, NAT64, 6to4, Teredo) and that form's name."""
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped, "IPv6-mapped"
    if addr in _NAT64:
        return ipaddress.IPv4Address(addr.packed[-4:]), "NAT64"
    if addr.sixtofour is not None:
        return addr.sixtofour, "6to4"
    if addr.teredo is not None:
        return addr.teredo[1], "Teredo"
    if addr.packed[:12] == bytes(12) and int(addr) > 1:
        return ipaddress.IPv4Address(addr.packed[-4:]), "IPv4-compatible"  # ::a.b.c.d (deprecated form)
    return None


def public_only(addr: IpAddress) -> str | None:
    """The default policy: only globally routable unicast addresses, looking through IPv6 forms that embed IPv4.

    Python 3.11's `ipaddress` does not treat `::ffff:127.0.0.1` as loopback, so embedded addresses are unwrapped
    and judged as the IPv4 address they reach.
    """
    if isinstance(addr, ipaddress.IPv4Address):
        return _category(addr)
    embedded = _embedded_v4(addr)
    if embedded is not None:
        inner, form = embedded
        reason = _category(inner)
        return f"{reason} ({form} {inner})" if reason else None
    if addr in _NAT64_LOCAL:
        return "a local-use NAT64 address"
    return _category(addr)


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve with the system resolver (in a worker thread, via anyio)."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class _Target:
    url: str
    parts: SplitResult
    host: str  # lower-case name or IP literal, no brackets
    port: int
    literal: IpAddress | None


def _parse(url: str) -> _Target:
    try:
        parts = urlsplit(url)
        port = parts.port or 443
    except ValueError as exc:
        raise ImageFetchError(url, f"not a valid URL ({exc})") from None
    if parts.scheme.lower() != "https":
        raise ImageFetchError(url, f"only https:// URLs are fetched, not {parts.scheme or 'a relative'} URL")
    if parts.username is not None or parts.password is not None:
        raise ImageFetchError(url, "credentials in the URL are not allowed")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise ImageFetchError(url, "the URL has no host")
    try:
        literal: IpAddress | None = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        literal = None
    return _Target(url, parts, host, port, literal)


async def _checked_address(target: _Target, resolver: Resolver, policy: AddressPolicy) -> IpAddress:
    """Resolve once and check every address; the first one is where the connection goes."""
    if target.literal is not None:
        candidates: list[IpAddress] = [target.literal]
    else:
        try:
            answers = await resolver(target.host, target.port)
        except OSError as exc:
            raise ImageFetchError(target.url, f"cannot resolve {target.host} ({exc})") from None
        try:
            candidates = [ipaddress.ip_address(a.split("%", 1)[0]) for a in answers]
        except ValueError as exc:
            raise ImageFetchError(target.url, f"resolver gave a bad address ({exc})") from None
    if not candidates:
        raise ImageFetchError(target.url, f"{target.host} resolves to no address")
    for addr in candidates:
        reason = policy(addr)
        if reason is not None:
            where = f"{target.host} resolves to {addr}," if target.literal is None else f"{addr} is"
            raise ImageFetchError(target.url, f"{where} {reason}")
    return candidates[0]


def _pinned_request(target: _Target, addr: IpAddress) -> tuple[str, dict[str, str], dict[str, str]]:
    """The URL aimed at the checked address, the Host header and the SNI name that keep TLS tied to the host."""
    ip_host = f"[{addr}]" if isinstance(addr, ipaddress.IPv6Address) else str(addr)
    netloc = f"{ip_host}:{target.port}"
    url = urlunsplit(("https", netloc, target.parts.path or "/", target.parts.query, ""))
    host_header = target.parts.netloc.rsplit("@", 1)[-1]
    extensions = {} if target.literal is not None else {"sni_hostname": target.host}
    return url, {"Host": host_header, "Accept": "image/*"}, extensions


def _mime_type(target: _Target, response: httpx2.Response) -> str:
    mime = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if not mime.startswith("image/"):
        raise ImageFetchError(target.url, f"the response is {mime or 'untyped'}, not image/*")
    if mime == "image/svg+xml":
        raise ImageFetchError(target.url, "SVG is a scriptable document, not a raster image")
    return mime


async def _read_capped(target: _Target, response: httpx2.Response, max_bytes: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise ImageFetchError(target.url, f"the image is {int(declared)} bytes, over the {max_bytes}-byte cap")
    data = bytearray()
    async for piece in response.aiter_bytes():
        data += piece
        if len(data) > max_bytes:
            raise ImageFetchError(target.url, f"the image exceeds the {max_bytes}-byte cap")
    return bytes(data)


async def _hop(
    target: _Target, addr: IpAddress, ssl_context: ssl.SSLContext | None, max_bytes: int
) -> FetchedImage | str:
    """One request to the pinned address: the image, or the next URL when the answer is a redirect."""
    import httpx2  # here: a server imports this module with gemini-ask and starts sooner without it

    url, headers, extensions = _pinned_request(target, addr)
    # A client per hop: a pooled connection would carry the previous hop's TLS session to a new host name.
    async with httpx2.AsyncClient(
        verify=ssl_context if ssl_context is not None else True, trust_env=False, follow_redirects=False
    ) as client:
        request = client.build_request("GET", url, headers=headers, extensions=extensions)
        try:
            response = await client.send(request, stream=True)
        except httpx2.HTTPError as exc:
            raise ImageFetchError(target.url, f"the request failed ({type(exc).__name__}: {exc})") from None
        try:
            if response.status_code in _REDIRECTS:
                location = response.headers.get("location")
                if not location:
                    raise ImageFetchError(target.url, f"HTTP {response.status_code} redirect without a Location")
                return urljoin(target.url, location)
            if response.status_code != 200:
                raise ImageFetchError(target.url, f"the server answered HTTP {response.status_code}")
            mime = _mime_type(target, response)
            return FetchedImage(await _read_capped(target, response, max_bytes), mime, target.url)
        except httpx2.HTTPError as exc:
            raise ImageFetchError(target.url, f"the download failed ({type(exc).__name__}: {exc})") from None
        finally:
            await response.aclose()


async def fetch_image(
    url: str,
    *,
    resolver: Resolver = system_resolver,
    policy: AddressPolicy = public_only,
    hop_timeout: float = HOP_TIMEOUT,
    max_bytes: int = MAX_IMAGE_BYTES,
    max_redirects: int = MAX_REDIRECTS,
    ssl_context: ssl.SSLContext | None = None,
) -> FetchedImage:
    """Fetch one image by https URL under the rules in the module docstring; raises `ImageFetchError`.

    `resolver`, `policy` and `ssl_context` exist so tests can serve from 127.0.0.1 with their own certificate; the
    defaults are the system resolver, public addresses only, and the system trust store.
    """
    current = url
    for hop in range(max_redirects + 1):
        target = _parse(current)
        addr = await _checked_address(target, resolver, policy)
        try:
            with anyio.fail_after(hop_timeout):
                outcome = await _hop(target, addr, ssl_context, max_bytes)
        except TimeoutError:
            raise ImageFetchError(current, f"no complete answer within {hop_timeout:g}s") from None
        if isinstance(outcome, FetchedImage):
            return outcome
        if hop == max_redirects:
            raise ImageFetchError(url, f"more than {max_redirects} redirects")
        current = outcome
    raise AssertionError("unreachable")  # the loop either returns or raises
