"""Settings are read once, validated, and every one is documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from vid2context.errors import ErrorCode, VidError
from vid2context.settings import SETTINGS, Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_match_the_table() -> None:
    settings = load_settings({})
    for setting in SETTINGS:
        assert getattr(settings, setting.field) == setting.default, setting.env


def test_values_are_converted() -> None:
    settings = load_settings(
        {
            "VID2CONTEXT_PUBLIC": "yes",
            "VID2CONTEXT_MAX_PLAYLIST_ITEMS": "1_000",
            "VID2CONTEXT_PROXY": " http://p:3128 ",
        }
    )
    assert settings.public is True
    assert settings.max_playlist_items == 1000
    assert settings.proxy == "http://p:3128"


@pytest.mark.parametrize(
    ("env", "value"),
    [
        ("VID2CONTEXT_PUBLIC", "maybe"),
        ("VID2CONTEXT_MAX_PLAYLIST_ITEMS", "lots"),
        ("VID2CONTEXT_HTTP_TIMEOUT_S", "-1"),
        ("VID2CONTEXT_MCP_MAX_TOKENS", "lots"),
        ("VID2CONTEXT_MCP_MAX_TOKENS", "-1"),
        ("VID2CONTEXT_MCP_MAX_TOKENS", "99"),
        ("VID2CONTEXT_MCP_MAX_TOKENS", "10_000_001"),
    ],
)
def test_a_bad_value_names_the_variable(env: str, value: str) -> None:
    with pytest.raises(VidError) as caught:
        load_settings({env: value})
    assert caught.value.code is ErrorCode.BAD_REQUEST
    assert env in caught.value.message
    assert caught.value.hint


def test_the_mcp_page_size_is_0_or_within_the_bounds_of_max_tokens() -> None:
    from vid2context.mcp.tools.common import MAX_BUDGET, MIN_BUDGET

    assert load_settings({}).mcp_max_tokens == 20_000
    for raw, value in [("0", 0), ("100", 100), ("5_000", 5000), (" 10000000 ", 10_000_000)]:
        assert load_settings({"VID2CONTEXT_MCP_MAX_TOKENS": raw}).mcp_max_tokens == value
    (setting,) = [s for s in SETTINGS if s.env == "VID2CONTEXT_MCP_MAX_TOKENS"]
    assert setting.bounds == (MIN_BUDGET, MAX_BUDGET)  # the same bounds as a call's maxTokens
    with pytest.raises(VidError) as caught:
        load_settings({"VID2CONTEXT_MCP_MAX_TOKENS": "50"})
    assert caught.value.message == (
        "VID2CONTEXT_MCP_MAX_TOKENS='50' is not valid: expected 0 (off) or 100 to 10000000."
    )
    assert caught.value.hint and "0 turns this default paging off" in caught.value.hint


def test_every_setting_has_a_field_and_a_help() -> None:
    fields = set(Settings.__struct_fields__)
    for setting in SETTINGS:
        assert setting.field in fields
        assert setting.help.endswith(".")
    assert {s.field for s in SETTINGS} == fields


def test_the_readme_points_at_the_generated_settings_page() -> None:
    """One list, generated: the README links it instead of keeping a copy that drifts
    (tests/test_site.py checks that the page names every setting)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(site/configuration.md)" in readme
