"""Webhooks: the four routes on every runtime (memory, the local SQLite stores, the Worker's D1 on
Miniflare), deliveries to a receiver written from the docs page alone (``webhook_receiver.py``),
the events of real jobs, retries and disabling, and the address rules at creation and delivery.

Time is never waited on: the retry unit is 0 (``VID2CONTEXT_WEBHOOK_RETRY_S=0``), or the schedule
is read from an injected ``sleep`` that returns at once.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from vid2context.errors import VidError
from vid2context.integrations.webhook_egress import GuardedSender
from vid2context.integrations.webhook_secrets import signature_header
from vid2context.integrations.webhook_targets import parse_target
from vid2context.integrations.webhooks import MAX_FAILURES, MAX_HOOKS, Webhooks
from vid2context.runtime import build_local_runtime

from .egress_standins import MappedResolver
from .runtimes import Runtimes, on_each_runtime_when
from .test_api_collections import Api as CollectionsApi
from .test_api_collections import assert_error as assert_contract_error
from .test_api_collections import youtube  # noqa: F401 (the fixture: YouTube from the recordings)
from .webhook_receiver import Receiver, docs_block, docs_verify
from .youtube_replay import PLAYLIST_ID

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.usefixtures("youtube"),
    pytest.mark.httpx_mock(
        assert_all_responses_were_requested=False, should_mock=lambda r: r.url.host not in RECEIVERS
    ),
]

API = "/api/v1"
RECEIVERS = ("127.0.0.1", "hooks.example.com")
"""Hosts of the receivers: their requests go to the network stand-ins, never to the recordings."""
QUIET = {"VID2CONTEXT_ACCESS_LOG": "0", "VID2CONTEXT_RATE_LIMIT": "0", "VID2CONTEXT_WEBHOOK_RETRY_S": "0"}
PLAYLIST = f"https://www.youtube.com/playlist?list={PLAYLIST_ID}"
BLOCKED = "botCheck001"
HOOK_FIELDS = {"id", "url", "events", "state", "failures", "createdAt"}


class Api(CollectionsApi):
    """The app over a runtime, with the calls these tests repeat."""

    async def add_hook(self, url: str, events: list[str] | None = None, **headers: str) -> dict[str, Any]:
        body = {"url": url, "events": events or ["job.succeeded", "job.failed", "collection.refreshed"]}
        response = await self.client.post(f"{API}/webhooks", json=body, headers=headers)
        assert response.status_code == 201, response.text
        return response.json()

    async def hooks(self, **headers: str) -> list[dict[str, Any]]:
        response = await self.client.get(f"{API}/webhooks", headers=headers)
        assert response.status_code == 200, response.text
        return response.json()["webhooks"]


@pytest.fixture
async def api(runtimes: Runtimes) -> AsyncIterator[Api]:
    served = Api(await runtimes.build(QUIET))
    yield served
    await served.client.aclose()


@pytest.fixture
def stored_api(api: Api) -> Api:
    """The app on each kind of runtime: a test that takes it runs once per kind."""
    return api


pytest_generate_tests = on_each_runtime_when("stored_api")


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The contract's error body, with a hint (every refusal here has a next step)."""
    error = assert_contract_error(response, status, code)
    assert error.get("hint"), error
    return error


async def _until(api: Api, hook_id: str, check: Any, **headers: str) -> dict[str, Any]:
    """The hook once ``check(hook)`` holds (polled: deliveries run in the background)."""
    async with asyncio.timeout(60):
        while True:
            hook = next(h for h in await api.hooks(**headers) if h["id"] == hook_id)
            if check(hook):
                return hook
            await asyncio.sleep(0.02)


# --- the routes, on every runtime ---------------------------------------------------------------


async def test_create_list_test_and_delete(stored_api: Api) -> None:
    async with Receiver() as receiver:
        created = await stored_api.add_hook(receiver.url, ["job.failed", "job.failed", "job.succeeded"])
        assert set(created) == HOOK_FIELDS | {"secret"}
        assert created["id"].startswith("wh_") and created["secret"].startswith("whsec_")
        assert created["events"] == ["job.failed", "job.succeeded"] and created["state"] == "active"
        receiver.secret = created["secret"]

        listed = await stored_api.hooks()
        assert [h["id"] for h in listed] == [created["id"]] and set(listed[0]) == HOOK_FIELDS
        raw = (await stored_api.client.get(f"{API}/webhooks")).text
        assert created["secret"] not in raw  # shown once, never again

        response = await stored_api.client.post(f"{API}/webhooks/{created['id']}/test")
        assert response.status_code == 200, response.text
        tested = response.json()
        assert tested["lastStatus"] == 200 and tested["failures"] == 0 and "lastError" not in tested
        assert tested["lastDeliveryAt"] and "secret" not in tested
        (got,) = receiver.got
        assert got.verified, got.headers  # the docs page's recipe accepts it
        body = json.loads(got.body)
        assert body["event"] == "webhook.test" == got.headers["x-vid2context-event"]
        assert body["id"] == got.headers["x-vid2context-delivery"] and body["id"].startswith("dlv_")
        assert (
            body["data"]["webhookId"] == created["id"] and got.headers["content-type"] == "application/json"
        )

        deleted = await stored_api.client.delete(f"{API}/webhooks/{created['id']}")
        assert deleted.status_code == 204, deleted.text
        assert await stored_api.hooks() == []
        assert_error(await stored_api.client.delete(f"{API}/webhooks/{created['id']}"), 404, "not-found")
        assert_error(await stored_api.client.post(f"{API}/webhooks/{created['id']}/test"), 404, "not-found")


async def test_a_refresh_sends_what_it_added_and_a_failed_job_says_so(stored_api: Api) -> None:
    async with Receiver() as receiver:
        hook = await stored_api.add_hook(receiver.url)
        receiver.secret = hook["secret"]
        made = await stored_api.client.post(
            f"{API}/collections", json={"name": "talks", "sources": [PLAYLIST]}
        )
        collection = made.json()
        job = (
            await stored_api.client.post(f"{API}/collections/{collection['id']}/refresh", json={"limit": 2})
        ).json()
        await stored_api.runtime.jobs.wait(stored_api.runtime, job["id"])
        failing = (
            await stored_api.client.post(f"{API}/jobs", json={"kind": "context", "input": BLOCKED})
        ).json()
        await stored_api.runtime.jobs.wait(stored_api.runtime, failing["id"])

        got = await receiver.wait_for(3)
        assert all(d.verified for d in got)
        bodies = {json.loads(d.body)["event"]: json.loads(d.body) for d in got}
        assert set(bodies) == {"job.succeeded", "collection.refreshed", "job.failed"}
        refreshed = bodies["collection.refreshed"]["data"]
        assert refreshed["jobId"] == job["id"] and refreshed["collectionId"] == collection["id"]
        assert refreshed["addedCount"] == 2 == len(refreshed["added"]) and refreshed["remaining"] == 10
        assert all(v["id"].startswith("youtube:") for v in refreshed["added"])
        succeeded = bodies["job.succeeded"]["data"]["job"]
        assert (
            succeeded["id"] == job["id"] and succeeded["status"] == "succeeded" and "result" not in succeeded
        )
        failed = bodies["job.failed"]["data"]["job"]
        assert failed["id"] == failing["id"] and failed["error"]["code"] == "blocked"
        assert len({d.headers["x-vid2context-delivery"] for d in got}) == 3


async def test_bad_input_is_refused_with_a_hint(stored_api: Api) -> None:
    post = stored_api.client.post
    good = {"url": "https://example.com/hook", "events": ["job.failed"]}
    for body, status, code in [
        ({"events": ["job.failed"]}, 400, "bad-request"),  # no url
        ({"url": "https://example.com/hook"}, 400, "bad-request"),  # no events
        ({**good, "events": []}, 400, "bad-request"),
        ({**good, "events": ["job.started"]}, 400, "bad-request"),
        ({**good, "events": "job.failed"}, 400, "bad-request"),
        ({**good, "events": [7]}, 400, "bad-request"),
        ({**good, "url": 7}, 400, "bad-request"),
        ({**good, "secret": "mine"}, 400, "bad-request"),  # nothing else is taken
        ({**good, "url": "ftp://example.com/hook"}, 400, "bad-request"),
        ({**good, "url": "file:///etc/passwd"}, 400, "bad-request"),
        ({**good, "url": "javascript:alert(1)"}, 400, "bad-request"),
        ({**good, "url": "https://user:pw@example.com/"}, 400, "bad-request"),
        ({**good, "url": "https://example.com/" + "a" * 3000}, 400, "bad-request"),
        ({**good, "url": "http://exa mple.com/"}, 400, "bad-request"),
        ({**good, "url": "http://169.254.169.254/latest/meta-data/"}, 400, "unsupported-input"),
        ({**good, "url": "http://[::ffff:169.254.169.254]/"}, 400, "unsupported-input"),
        ({**good, "url": "http://2852039166/"}, 400, "unsupported-input"),
        ({**good, "url": "http://metadata.google.internal/computeMetadata/v1/"}, 400, "unsupported-input"),
    ]:
        error = assert_error(await post(f"{API}/webhooks", json=body), status, code)
        assert "169.254" not in error["message"] + error["hint"], error  # the class, never the address
    assert_error(
        await post(f"{API}/webhooks", content=b"{not json", headers={"Content-Type": "application/json"}),
        400,
        "bad-request",
    )
    huge = json.dumps({**good, "url": "https://example.com/" + "a" * (1100 * 1024)}).encode()
    assert_error(
        await post(f"{API}/webhooks", content=huge, headers={"Content-Type": "application/json"}),
        413,
        "too-large",
    )
    for hook_id in ("nope", "wh_" + "x" * 200, "wh_%00", "../../etc"):
        assert_error(await stored_api.client.delete(f"{API}/webhooks/{hook_id}"), 404, "not-found")
        assert_error(await post(f"{API}/webhooks/{hook_id}/test"), 404, "not-found")
    assert await stored_api.hooks() == []  # nothing was kept of any of it


async def test_one_key_may_have_twenty_hooks(stored_api: Api) -> None:
    api = stored_api
    for _ in range(MAX_HOOKS):
        await api.add_hook("https://93.184.216.34/hook", ["job.failed"])
    error = assert_error(
        await api.client.post(
            f"{API}/webhooks", json={"url": "https://93.184.216.34/hook", "events": ["job.failed"]}
        ),
        400,
        "bad-request",
    )
    assert "DELETE /api/v1/webhooks/{hook_id}" in error["hint"]
    assert len(await api.hooks()) == MAX_HOOKS


async def test_a_hook_is_seen_only_by_the_key_that_made_it(runtimes: Runtimes) -> None:
    api = Api(await runtimes.build({**QUIET, "VID2CONTEXT_API_KEYS": "first-key,second-key"}))
    first, second = {"Authorization": "Bearer first-key"}, {"Authorization": "Bearer second-key"}
    hook = await api.add_hook("https://example.com/hook", ["job.failed"], **first)
    assert await api.hooks(**second) == [] and len(await api.hooks(**first)) == 1
    assert_error(await api.client.delete(f"{API}/webhooks/{hook['id']}", headers=second), 404, "not-found")
    assert_error(await api.client.post(f"{API}/webhooks/{hook['id']}/test", headers=second), 404, "not-found")
    response = await api.client.get(f"{API}/webhooks")
    assert_error(response, 401, "unauthorized")
    await api.client.aclose()


# --- retries, disabling, redirects --------------------------------------------------------------


async def test_failures_are_retried_then_the_hook_is_disabled_and_a_test_revives_it(stored_api: Api) -> None:
    hooks = stored_api.runtime.webhooks
    assert hooks is not None
    async with Receiver(statuses=(500,)) as receiver:
        hook = await stored_api.add_hook(receiver.url, ["job.failed"])
        receiver.secret = hook["secret"]
        assert await hooks.emit("job.failed", {"job": {"id": "job_first"}}) == 1
        after_one = await _until(stored_api, hook["id"], lambda h: h["failures"] == 5)
        assert after_one["state"] == "active" and after_one["lastStatus"] == 500
        assert after_one["lastError"] == "HTTP 500."
        got = await receiver.wait_for(5)
        assert len({d.headers["x-vid2context-delivery"] for d in got}) == 1  # one delivery, five tries
        assert all(d.verified for d in got)

        await hooks.emit("job.failed", {"job": {"id": "job_second"}})
        disabled = await _until(stored_api, hook["id"], lambda h: h["state"] == "disabled")
        assert disabled["failures"] == MAX_FAILURES and len(receiver.got) == MAX_FAILURES
        assert await hooks.emit("job.failed", {"job": {"id": "job_third"}}) == 0  # nothing to a disabled hook
        assert len(receiver.got) == MAX_FAILURES

        receiver.statuses = [204]
        revived = (await stored_api.client.post(f"{API}/webhooks/{hook['id']}/test")).json()
        assert revived["state"] == "active" and revived["failures"] == 0 and revived["lastStatus"] == 204


async def test_redirects_are_not_followed(api: Api) -> None:
    async with Receiver() as elsewhere, Receiver(redirect="") as receiver:
        receiver.redirect = elsewhere.url
        hook = await api.add_hook(receiver.url, ["job.failed"])
        tested = (await api.client.post(f"{API}/webhooks/{hook['id']}/test")).json()
        assert tested["lastStatus"] == 302 and "redirects are not followed" in tested["lastError"]
        assert tested["failures"] == 1 and len(receiver.got) == 1 and elsewhere.got == []


async def test_the_retry_schedule_comes_from_the_retry_unit(runtimes: Runtimes) -> None:
    runtime = await runtimes.build(QUIET)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    assert runtime.webhooks is not None
    hooks = Webhooks(runtime.webhooks.store, runtime.webhooks.sender, retry_s=30, sleep=sleep)
    async with Receiver(statuses=(503,)) as receiver:
        await hooks.create("open", receiver.url, ["job.succeeded"])
        await hooks.emit("job.succeeded", {"job": {"id": "job_x"}})
        await receiver.wait_for(5)
        assert waits == [30, 120, 480, 1920] and len(receiver.got) == 5


async def test_closing_lets_the_first_attempt_finish_and_stops_the_waiting_retries(
    tmp_path: Path,
) -> None:
    """``vid2context refresh --due`` closes its runtime as soon as the refresh ends: its events
    must still go out; a retry waiting 30 s must not hold the exit."""
    async with Receiver() as receiver, Receiver(statuses=(500,)) as failing:
        runtime = build_local_runtime(
            {"VID2CONTEXT_HOME": str(tmp_path), "VID2CONTEXT_WEBHOOK_RETRY_S": "30"}
        )
        hooks = runtime.webhooks
        assert hooks is not None
        await hooks.create("open", receiver.url, ["job.failed"])
        await hooks.create("open", failing.url, ["job.failed"])
        assert await hooks.emit("job.failed", {"job": {"id": "job_last"}}) == 2
        await runtime.aclose()  # at once: nothing was sent yet
        assert len(receiver.got) == 1 and len(failing.got) == 1  # each first attempt made, no retry


# --- the address rules, at creation and at every delivery ---------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/", "http://169.254.170.2/v2/credentials", "http://[fe80::1]/",
        "http://[fd00:ec2::254]/", "http://100.100.100.200/", "http://0.0.0.0/", "http://224.0.0.1/",
        "http://0xa9fea9fe/", "http://metadata.google.internal/", "http://instance-data/",
    ],
)  # fmt: skip
async def test_link_local_and_metadata_addresses_are_always_refused(url: str) -> None:
    for public in (False, True):
        with pytest.raises(VidError) as refused:
            parse_target(url, public=public)
        assert refused.value.code.value == "unsupported-input"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/",
        "http://10.0.0.7/",
        "http://localhost/",
        "http://printer.lan/",
        "https://example.com:8443/",
    ],
)
async def test_private_and_loopback_targets_are_refused_in_public_mode_only(url: str) -> None:
    parse_target(url, public=False)
    with pytest.raises(VidError) as refused:
        parse_target(url, public=True)
    assert refused.value.code.value == "unsupported-input"


async def test_a_name_that_resolves_to_the_metadata_address_is_refused_at_creation_and_at_delivery(
    tmp_path: Path,
) -> None:
    async with Receiver() as receiver:
        resolver = MappedResolver({"hooks.example.com": [["127.0.0.1"], ["127.0.0.1"], ["169.254.169.254"]]})
        runtime = build_local_runtime({"VID2CONTEXT_HOME": str(tmp_path), **QUIET}, resolver=resolver)
        api = Api(runtime)
        try:
            url = f"http://hooks.example.com:{receiver.port}/hooks"
            hook = await api.add_hook(url, ["job.failed"])  # lookup 1: 127.0.0.1, allowed outside public mode
            receiver.secret = hook["secret"]
            first = (await api.client.post(f"{API}/webhooks/{hook['id']}/test")).json()
            assert first["lastStatus"] == 200 and receiver.got[0].verified  # lookup 2: still 127.0.0.1
            rebound = (await api.client.post(f"{API}/webhooks/{hook['id']}/test")).json()  # lookup 3
            assert "lastStatus" not in rebound and rebound["failures"] == 1
            assert rebound["lastError"].startswith("Refused:") and "link-local" in rebound["lastError"]
            assert len(receiver.got) == 1  # the rebound delivery reached nothing
            assert resolver.lookups == ["hooks.example.com"] * 3

            error = assert_error(
                await api.client.post(f"{API}/webhooks", json={"url": url, "events": ["job.failed"]}),
                400,
                "unsupported-input",
            )  # DNS says 169.254.169.254 now: refused at creation too
            assert "link-local" in error["message"]
        finally:
            await api.client.aclose()
            await runtime.aclose()


async def test_public_mode_refuses_a_name_that_resolves_to_loopback(tmp_path: Path) -> None:
    resolver = MappedResolver({"hooks.example.com": ["127.0.0.1"]})
    sender = GuardedSender(public=True, resolver=resolver)
    try:
        with pytest.raises(VidError) as refused:
            await sender.check("https://hooks.example.com/hooks")
        assert refused.value.code.value == "unsupported-input" and "loopback" in refused.value.message
        with pytest.raises(VidError):
            await sender.post("https://hooks.example.com/hooks", b"{}", {})
    finally:
        await sender.aclose()


async def test_public_mode_refuses_private_targets_on_every_runtime(
    stored_api: Api, runtimes: Runtimes
) -> None:
    public = Api(await runtimes.build({**QUIET, "VID2CONTEXT_PUBLIC": "1"}))
    for url in (
        "http://127.0.0.1/hook",
        "http://10.1.2.3/hook",
        "http://localhost/hook",
        "https://[::1]/hook",
    ):
        body = {"url": url, "events": ["job.failed"]}
        error = assert_error(await public.client.post(f"{API}/webhooks", json=body), 400, "unsupported-input")
        assert "public addresses only" in error["hint"]
    assert await public.hooks() == []
    await public.client.aclose()


async def test_a_stored_hook_to_the_metadata_address_is_refused_at_delivery(stored_api: Api) -> None:
    """A row made before the rules (or the server's mode) changed: each attempt checks again."""
    hooks = stored_api.runtime.webhooks
    assert hooks is not None
    hook = await stored_api.add_hook("https://93.184.216.34/hook", ["job.failed"])  # no DNS lookup
    stored = await hooks.store.get(hook["id"])
    assert stored is not None
    await hooks.store.delete(hook["id"], "open")
    await hooks.store.create({**stored, "url": "http://169.254.169.254/latest/meta-data/"})
    tested = (await stored_api.client.post(f"{API}/webhooks/{hook['id']}/test")).json()
    assert tested["failures"] == 1 and "lastStatus" not in tested, tested
    assert tested["lastError"].startswith("Refused:") and "link-local" in tested["lastError"]


# --- the secret -----------------------------------------------------------------------------------


async def test_the_secret_is_sealed_at_rest_and_never_logged(
    runtimes: Runtimes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    runtime = await runtimes.build({**QUIET, "VID2CONTEXT_WEBHOOK_KEY": "a long random server key 8c1f0e"})
    api = Api(runtime)
    async with Receiver(statuses=(200, 500)) as receiver:
        hook = await api.add_hook(receiver.url, ["job.failed"])
        receiver.secret = hook["secret"]
        assert runtime.webhooks is not None
        stored = await runtime.webhooks.store.get(hook["id"])
        assert (
            stored is not None
            and stored["secret"].startswith("v1:")
            and hook["secret"] not in stored["secret"]
        )
        await api.client.post(f"{API}/webhooks/{hook['id']}/test")
        await api.client.post(f"{API}/webhooks/{hook['id']}/test")
        assert [d.verified for d in receiver.got] == [True, True]
        assert hook["secret"] not in caplog.text

        rekeyed = Webhooks(runtime.webhooks.store, runtime.webhooks.sender, key="another key")
        assert (
            await rekeyed.attempt({"hook": hook["id"], "id": "dlv_x", "event": "webhook.test", "body": "{}"})
            == "failed"
        )
        after = (await api.hooks())[0]
        assert "VID2CONTEXT_WEBHOOK_KEY" in after["lastError"] and len(receiver.got) == 2
    await api.client.aclose()


# --- the receiver's side: the docs' recipe tells forged and stale deliveries ----------------------


async def test_the_docs_recipe_accepts_ours_and_refuses_forged_and_stale_signatures() -> None:
    verify = docs_verify()
    secret, body, sent = "whsec_abc", b'{"id":"dlv_1","event":"job.failed"}', 1_780_000_000
    header = signature_header(secret, sent, body)
    assert verify(secret, header, body, now=sent)
    assert verify(secret, header, body, now=sent + 300) and verify(secret, header, body, now=sent - 300)
    assert not verify(secret, header, body, now=sent + 301)  # stale: a replay
    assert not verify(secret, header, body, now=sent - 301)  # from the future
    assert not verify(secret, header, body + b" ", now=sent)  # the body was changed
    assert not verify("whsec_other", header, body, now=sent)  # signed with another secret
    t, v1 = header.split(",")
    forged_time = f"t={sent + 60},{v1}"  # a fresh time on an old signature
    assert not verify(secret, forged_time, body, now=sent + 60)
    assert not verify(secret, t, body, now=sent)  # no v1
    assert not verify(secret, v1, body, now=sent)  # no t
    assert not verify(secret, f"{t},v1={'0' * 64}", body, now=sent)
    assert not verify(secret, f"t=abc,{v1}", body, now=sent)
    assert not verify(secret, "", body, now=sent)
    assert verify(secret, f"{t},v1={'0' * 64},{v1}", body, now=sent)  # one matching v1 is enough


async def test_the_docs_node_recipe_agrees(tmp_path: Path) -> None:
    """The page's Node.js block, run by node on our signatures and on forged and stale ones."""

    node = shutil.which("node")
    assert node is not None, "Node.js is needed (make test installs it)"
    secret, body, sent = "whsec_node", b'{"event":"job.succeeded"}', 1_780_000_000
    header = signature_header(secret, sent, body)
    cases = [
        (header, body, sent, True),
        (header, body, sent + 301, False),
        (header, body + b"x", sent, False),
        (header.replace("t=", "t=1"), body, sent, False),
        (header.split(",")[1], body, sent, False),
    ]
    script = tmp_path / "verify.mjs"
    script.write_text(
        docs_block("js")
        + "\nconst cases = JSON.parse(process.argv[2]);\n"
        + "console.log(JSON.stringify(cases.map(([s, h, b, now]) => verify(s, h, Buffer.from(b, 'base64'), now))));\n"
    )
    argument = json.dumps([[secret, h, base64.b64encode(b).decode(), now] for h, b, now, _ in cases])
    ran = subprocess.run(
        [node, str(script), argument], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(ran.stdout) == [expected for *_, expected in cases]
