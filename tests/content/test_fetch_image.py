"""Fetching a reference image by URL: one refused attempt per SSRF rule, and a good fetch accepted.

The good fetches go to a real https server on 127.0.0.1 whose certificate names `images.test`; an injected resolver
maps that name to 127.0.0.1 and an injected policy admits exactly that address, so the default policy is still
the one that must refuse loopback.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gemini_relay.content.fetch_image import (
    MAX_IMAGE_BYTES,
    FetchedImage,
    ImageFetchError,
    IpAddress,
    Resolver,
    fetch_image,
    public_only,
)

from .https_images import HOST_NAME, PNG, HttpsImageServer

pytestmark = pytest.mark.anyio

LOOPBACK = ipaddress.ip_address("127.0.0.1")


def loopback_allowed(addr: IpAddress) -> str | None:
    """The test policy: the local test server's address, and otherwise exactly the default rules."""
    return None if addr == LOOPBACK else public_only(addr)


def resolving(table: dict[str, list[str]]) -> Resolver:
    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"unknown test host {host}")
        return table[host]

    return resolve


LOCAL = resolving({HOST_NAME: ["127.0.0.1"], "internal.test": ["10.0.0.5"], "mixed.test": ["8.8.8.8", "10.0.0.5"]})


@pytest.fixture
def server(tmp_path: Path) -> Iterator[HttpsImageServer]:
    with HttpsImageServer(tmp_path) as srv:
        yield srv


async def fetch_local(
    server: HttpsImageServer, url: str, *, max_bytes: int = MAX_IMAGE_BYTES, hop_timeout: float = 5.0
) -> FetchedImage:
    return await fetch_image(
        url,
        resolver=LOCAL,
        policy=loopback_allowed,
        ssl_context=server.client_context,
        max_bytes=max_bytes,
        hop_timeout=hop_timeout,
    )


async def test_a_public_https_image_is_fetched_over_the_pinned_address_with_the_host_name_kept(
    server: HttpsImageServer,
) -> None:
    image = await fetch_local(server, server.url("/ok.png"))

    assert (image.data, image.mime_type, image.url) == (PNG, "image/png", server.url("/ok.png"))
    # `images.test` exists only in the injected resolver, so the connection went to the pinned 127.0.0.1, and TLS
    # verified the certificate's host name, so SNI carried the name; the Host header kept it too.
    assert server.seen == [("/ok.png", f"{HOST_NAME}:{server.port}")]


async def test_redirects_are_followed_and_each_hop_is_checked(server: HttpsImageServer) -> None:
    image = await fetch_local(server, server.url(f"/redirect?to={server.url('/ok.png')}"))
    assert image.data == PNG
    assert image.url == server.url("/ok.png")
    assert [path for path, _ in server.seen] == ["/redirect", "/ok.png"]


async def test_the_default_policy_refuses_a_name_that_resolves_to_loopback(server: HttpsImageServer) -> None:
    with pytest.raises(ImageFetchError, match=r"images\.test resolves to 127\.0\.0\.1, a loopback address"):
        await fetch_image(server.url("/ok.png"), resolver=LOCAL, ssl_context=server.client_context)
    assert server.seen == []


async def test_a_literal_loopback_address_is_refused_before_any_connection(server: HttpsImageServer) -> None:
    with pytest.raises(ImageFetchError, match=r"127\.0\.0\.1 is a loopback address"):
        await fetch_image(server.url("/ok.png", host="127.0.0.1"), ssl_context=server.client_context)
    assert server.seen == []


@pytest.mark.parametrize(
    ("host", "rule"),
    [
        ("10.1.2.3", "a private address"),
        ("192.168.1.1", "a private address"),
        ("172.16.0.9", "a private address"),
        ("169.254.169.254", "a link-local address"),
        ("0.0.0.0", "an unspecified address"),
        ("224.0.0.1", "a multicast address"),
        ("240.0.0.1", "a reserved address"),
        ("100.64.0.1", "not a public address"),
        ("[::1]", "a loopback address"),
        ("[fe80::1]", "a link-local address"),
        ("[fc00::1]", "a private address"),
        ("[::]", "an unspecified address"),
    ],
)
async def test_a_literal_non_public_address_is_refused(host: str, rule: str) -> None:
    with pytest.raises(ImageFetchError, match=rule):
        await fetch_image(f"https://{host}/cat.png")


@pytest.mark.parametrize(
    ("host", "form"),
    [
        ("[::ffff:127.0.0.1]", "IPv6-mapped 127.0.0.1"),
        ("[::ffff:7f00:1]", "IPv6-mapped 127.0.0.1"),
        ("[::ffff:10.0.0.1]", "IPv6-mapped 10.0.0.1"),
        ("[::127.0.0.1]", "IPv4-compatible 127.0.0.1"),
        ("[64:ff9b::7f00:1]", "NAT64 127.0.0.1"),
        ("[2002:7f00:1::]", "6to4 127.0.0.1"),
    ],
)
async def test_ipv6_forms_that_embed_a_non_public_ipv4_address_are_refused(host: str, form: str) -> None:
    with pytest.raises(ImageFetchError, match=form):
        await fetch_image(f"https://{host}/cat.png")


async def test_ipv6_mapped_loopback_is_refused_even_when_the_test_policy_admits_plain_loopback(
    server: HttpsImageServer,
) -> None:
    with pytest.raises(ImageFetchError, match=r"loopback address \(IPv6-mapped 127\.0\.0\.1\)"):
        await fetch_local(server, f"https://[::ffff:127.0.0.1]:{server.port}/ok.png")
    assert server.seen == []


async def test_a_name_resolving_to_a_private_address_is_refused() -> None:
    with pytest.raises(ImageFetchError, match=r"internal\.test resolves to 10\.0\.0\.5, a private address"):
        await fetch_image("https://internal.test/cat.png", resolver=LOCAL)


async def test_every_resolved_address_is_checked_not_just_the_first() -> None:
    with pytest.raises(ImageFetchError, match=r"mixed\.test resolves to 10\.0\.0\.5"):
        await fetch_image("https://mixed.test/cat.png", resolver=LOCAL)


async def test_a_name_that_does_not_resolve_is_refused_with_the_resolver_error() -> None:
    with pytest.raises(ImageFetchError, match=r"cannot resolve nowhere\.test"):
        await fetch_image("https://nowhere.test/cat.png", resolver=LOCAL)


async def test_a_redirect_to_a_private_address_is_refused_at_that_hop(server: HttpsImageServer) -> None:
    with pytest.raises(ImageFetchError, match=r"https://10\.0\.0\.8/x\.png: 10\.0\.0\.8 is a private address"):
        await fetch_local(server, server.url("/redirect?to=https://10.0.0.8/x.png"))
    assert [path for path, _ in server.seen] == ["/redirect"]


async def test_a_redirect_to_a_name_resolving_to_a_private_address_is_refused(server: HttpsImageServer) -> None:
    with pytest.raises(ImageFetchError, match=r"internal\.test resolves to 10\.0\.0\.5"):
        await fetch_local(server, server.url("/redirect?to=https://internal.test/x.png"))


async def test_a_redirect_to_plain_http_is_refused(server: HttpsImageServer) -> None:
    with pytest.raises(ImageFetchError, match=r"only https:// URLs are fetched, not http"):
        await fetch_local(server, server.url(f"/redirect?to=http://{HOST_NAME}:{server.port}/ok.png"))


async def test_more_than_five_redirects_are_refused(server: HttpsImageServer) -> None:
    with pytest.raises(ImageFetchError, match=r"more than 5 redirects"):
        await fetch_local(server, server.url("/loop?n=0"))
    assert len(server.seen) == 6


@pytest.mark.parametrize("url", ["http://example.com/cat.png", "ftp://example.com/cat.png", "/cat.png"])
async def test_anything_but_https_is_refused(url: str) -> None:
    with pytest.raises(ImageFetchError, match=r"only https:// URLs are fetched"):
        await fetch_image(url)


async def test_credentials_in_the_url_are_refused() -> None:
    with pytest.raises(ImageFetchError, match=r"credentials in the URL"):
        await fetch_image("https://user:secret@example.com/cat.png")


async def test_a_body_over_the_cap_is_refused_while_streaming(server: HttpsImageServer) -> None:
    with pytest.raises(ImageFetchError, match=r"exceeds the 15728640-byte cap"):
        await fetch_local(server, server.url("/big?mb=16"))


async def test_a_declared_length_over_the_cap_is_refused_before_reading(server: HttpsImageServer) -> None:
    with pytest.raises(ImageFetchError, match=r"is 20971520 bytes, over the 15728640-byte cap"):
        await fetch_local(server, server.url("/declared-big"))


async def test_a_smaller_cap_applies_to_a_smaller_body(server: HttpsImageServer) -> None:
    with pytest.raises(ImageFetchError, match=r"exceeds the 1000-byte cap"):
        await fetch_local(server, server.url("/big?mb=1"), max_bytes=1000)


@pytest.mark.parametrize(("path", "rule"), [("/page", "text/html, not image/"), ("/vector", "SVG is a scriptable")])
async def test_a_body_that_is_not_a_raster_image_is_refused(server: HttpsImageServer, path: str, rule: str) -> None:
    with pytest.raises(ImageFetchError, match=rule):
        await fetch_local(server, server.url(path))


async def test_an_error_status_is_refused_with_the_status(server: HttpsImageServer) -> None:
    with pytest.raises(ImageFetchError, match=r"answered HTTP 404"):
        await fetch_local(server, server.url("/missing.png"))


async def test_a_hop_that_stalls_is_abandoned_at_its_timeout(server: HttpsImageServer) -> None:
    started = time.monotonic()
    with pytest.raises(ImageFetchError, match=r"no complete answer within 0\.3s"):
        await fetch_local(server, server.url("/stall"), hop_timeout=0.3)
    assert time.monotonic() - started < 3.0


async def test_an_untrusted_certificate_is_refused(server: HttpsImageServer) -> None:
    with pytest.raises(ImageFetchError, match=r"the request failed \(ConnectError"):
        await fetch_image(server.url("/ok.png"), resolver=LOCAL, policy=loopback_allowed)


def test_public_addresses_pass_the_default_policy() -> None:
    for text in ("8.8.8.8", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"):
        assert public_only(ipaddress.ip_address(text)) is None, text
