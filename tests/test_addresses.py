"""Which addresses and names public mode fetches, and the class each refused one is given.

Offline and pure: ``addresses`` never resolves a name. The refusal names the class, never the
address.
"""

from __future__ import annotations

import ipaddress

import pytest

from vid2context.addresses import AddressClass, address_class, host_class, name_class, refusal
from vid2context.errors import ErrorCode

C = AddressClass

ADDRESSES = [
    ("127.0.0.1", C.LOOPBACK),
    ("127.255.0.9", C.LOOPBACK),
    ("0.0.0.0", C.UNSPECIFIED),
    ("0.1.2.3", C.UNSPECIFIED),
    ("10.0.0.7", C.PRIVATE),
    ("172.16.5.4", C.PRIVATE),
    ("172.31.255.255", C.PRIVATE),
    ("192.168.1.1", C.PRIVATE),
    ("100.64.0.1", C.SHARED),
    ("100.127.255.254", C.SHARED),
    ("169.254.169.254", C.LINK_LOCAL),
    ("192.0.2.10", C.DOCUMENTATION),
    ("198.51.100.1", C.DOCUMENTATION),
    ("203.0.113.9", C.DOCUMENTATION),
    ("198.18.0.1", C.BENCHMARKING),
    ("224.0.0.1", C.MULTICAST),
    ("239.255.255.250", C.MULTICAST),
    ("240.0.0.1", C.RESERVED),
    ("255.255.255.255", C.RESERVED),
    ("192.0.0.8", C.RESERVED),
    ("192.88.99.1", C.RESERVED),
    ("::", C.UNSPECIFIED),
    ("::1", C.LOOPBACK),
    ("fe80::1", C.LINK_LOCAL),
    ("fe80::1%eth0", C.LINK_LOCAL),
    ("fc00::1", C.PRIVATE),
    ("fd12:3456::1", C.PRIVATE),
    ("fec0::1", C.PRIVATE),
    ("ff02::1", C.MULTICAST),
    ("2001:db8::1", C.DOCUMENTATION),
    ("2001::1", C.TEREDO),
    ("2001:2::1", C.BENCHMARKING),
    ("64:ff9b:1::1", C.PRIVATE),
    ("100::1", C.RESERVED),
    ("::7f00:1", C.RESERVED),  # IPv4-compatible, deprecated
    # IPv6 forms that carry an IPv4 address are that address.
    ("::ffff:127.0.0.1", C.LOOPBACK),
    ("::ffff:10.1.2.3", C.PRIVATE),
    ("::ffff:169.254.169.254", C.LINK_LOCAL),
    ("64:ff9b::7f00:1", C.LOOPBACK),
    ("64:ff9b::a00:1", C.PRIVATE),
    ("2002:7f00:1::", C.LOOPBACK),
    ("2002:a9fe:a9fe::1", C.LINK_LOCAL),
    ("2002:6440:1::", C.SHARED),
]

PUBLIC = [
    "93.184.216.34",
    "8.8.8.8",
    "1.1.1.1",
    "100.128.0.1",  # just past carrier-grade NAT
    "172.32.0.1",  # just past 172.16/12
    "2606:4700:4700::1111",
    "2a00:1450:4001:81c::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
]


@pytest.mark.parametrize(("address", "expected"), ADDRESSES)
def test_each_non_public_address_has_its_class(address: str, expected: AddressClass) -> None:
    assert address_class(ipaddress.ip_address(address)) is expected


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_have_no_class(address: str) -> None:
    assert address_class(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("localhost", C.LOOPBACK),
        ("foo.localhost", C.LOOPBACK),
        ("app.localtest.me", C.LOOPBACK),
        ("lvh.me", C.LOOPBACK),
        ("127.0.0.1.nip.io", C.WILDCARD_NAME),
        ("10.0.0.1.sslip.io", C.WILDCARD_NAME),
        ("printer.local", C.LOCAL_NAME),
        ("metadata.google.internal", C.LOCAL_NAME),
        ("router.home.arpa", C.LOCAL_NAME),
        ("nas.lan", C.LOCAL_NAME),
        ("intranet", C.LOCAL_NAME),
        ("media.example", C.RESERVED_NAME),
        ("x.test", C.RESERVED_NAME),
        ("hidden.onion", C.RESERVED_NAME),
        ("example.com", None),
        ("www.youtube.com", None),
        ("localhost.example.com", None),
        ("notlocal", C.LOCAL_NAME),
    ],
)
def test_names_that_are_local_whatever_dns_says(name: str, expected: AddressClass | None) -> None:
    assert name_class(name) is expected


def test_host_class_reads_literals_and_names() -> None:
    assert host_class("[::1]") is C.LOOPBACK
    assert host_class("10.0.0.1") is C.PRIVATE
    assert host_class("example.com") is None
    assert host_class("localhost") is C.LOOPBACK


@pytest.mark.parametrize("found", list(AddressClass))
def test_a_refusal_names_the_class_and_never_an_address(found: AddressClass) -> None:
    error = refusal(found, subject="The host 'media.example'")
    assert error.code is ErrorCode.UNSUPPORTED_INPUT
    assert found.value in error.message
    assert found.phrase in (error.hint or "")
    assert "POST /api/v1/uploads" in (error.hint or "")
    for address, _ in ADDRESSES:
        assert address not in error.message + (error.hint or "")
