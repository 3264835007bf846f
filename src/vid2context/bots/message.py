"""A chat answer in neutral form, and its rendering in each platform's markup within its limit.

An answer is lines of parts, each part text or a link. Telegram gets HTML (``parse_mode: HTML``,
``<a href>``), Discord Markdown with the link in angle brackets (a masked link that makes no
embed), Slack mrkdwn (``<url|text>``). Text is escaped for each, so a title or a caption can never
become markup. Each platform caps a message (Telegram 4,096 characters, Discord 2,000, Slack's
advice 4,000 for ``text``): lines are kept whole while they fit, then one line says how many were
left out.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["LIMITS", "Message", "Part", "render"]

LIMITS = {"telegram": 4096, "discord": 2000, "slack": 4000}


@dataclass(frozen=True, slots=True)
class Part:
    text: str
    url: str | None = None


@dataclass
class Message:
    lines: list[list[Part]] = field(default_factory=list)

    def add(self, *parts: Part | str) -> Message:
        self.lines.append([part if isinstance(part, Part) else Part(part) for part in parts])
        return self


def _telegram(part: Part) -> str:
    text = html.escape(part.text, quote=False)
    return f'<a href="{html.escape(part.url)}">{text}</a>' if part.url else text


_DISCORD_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\*_~`|>[]()<#@-"})


def _discord(part: Part) -> str:
    text = part.text.translate(_DISCORD_SPECIAL)
    return f"[{text}](<{part.url}>)" if part.url else text


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack(part: Part) -> str:
    if part.url:
        label = _slack_escape(part.text).replace("|", "¦")
        return f"<{_slack_escape(part.url)}|{label}>"
    return _slack_escape(part.text)


_RENDER: dict[str, Callable[[Part], str]] = {"telegram": _telegram, "discord": _discord, "slack": _slack}


def render(message: Message, platform: str) -> str:
    """The message in ``platform``'s markup, at most its limit in characters."""
    one = _RENDER[platform]
    limit = LIMITS[platform]
    lines = ["".join(one(part) for part in line) for line in message.lines]
    kept: list[str] = []
    size = 0
    for i, line in enumerate(lines):
        rest = len(lines) - i
        note = one(Part(f"… and {rest} more lines."))
        if size + len(line) + 1 > limit - (len(note) + 1 if rest > 1 else 0):
            if not kept:  # one line longer than a message: cut its text, never its markup
                plain = one(Part(message.lines[i][0].text[: max(0, limit - 2)] + "…"))
                return plain[:limit]
            kept.append(note)
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept)
