"""The named templates of ``extract`` and ``build_brief``: what each asks the model for.

An extraction template is a JSON Schema (checked by ``json_schema.check_schema`` like any the
caller gives) and one sentence of instructions. A brief template is the focus the brief is
written with: the claims, consensus, disagreement and open questions are always the same shape
(``answers/briefs.py``); the template says which claims matter. The site's REST and MCP pages list
them from here (``extract_templates`` / ``brief_templates`` name them in errors too).

Extraction templates::

    facts        {facts: [{statement, category?}]}            checkable statements of fact
    people       {people: [{name, role?, description?}]}      people and organisations mentioned
    products     {products: [{name, maker?, price?, verdict?, pros[], cons[]}]}  products reviewed
    steps        {goal?, steps: [{order, action, details?}]}  a how-to's steps in order
    recipe       {dish?, servings?, ingredients: [{item, quantity?}], steps: [string]}
    timeline     {events: [{when, what}]}                      dated events, in the order told
    quotes       {quotes: [{speaker?, text}]}                  notable quotes, word for word

Brief templates: ``research`` (the default: the main claims about the question or the videos'
subject) and ``buyer-guide`` (models, years, known issues, prices with their dates, what to check).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ErrorCode, VidError

__all__ = [
    "BRIEF_TEMPLATES",
    "DEFAULT_BRIEF_TEMPLATE",
    "EXTRACT_TEMPLATES",
    "BriefTemplate",
    "ExtractTemplate",
    "brief_template",
    "extract_template",
]


@dataclass(frozen=True)
class ExtractTemplate:
    name: str
    asks: str
    """One sentence for the model (and the docs): what to extract."""
    schema: dict[str, Any]


@dataclass(frozen=True)
class BriefTemplate:
    name: str
    asks: str
    """The focus of the brief, for the model (and the docs)."""


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "description": description}


def _optional(description: str) -> dict[str, Any]:
    return {"type": ["string", "null"], "description": description}


def _list_of(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    item = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return {
        "type": "object",
        "properties": {name: {"type": "array", "items": item}},
        "required": [name],
        "additionalProperties": False,
    }


EXTRACT_TEMPLATES: dict[str, ExtractTemplate] = {
    template.name: template
    for template in (
        ExtractTemplate(
            "facts",
            "Every checkable statement of fact the videos make (numbers, dates, specifications, results).",
            _list_of(
                "facts",
                {
                    "statement": _text("The fact, in one sentence."),
                    "category": _optional("A short topic label."),
                },
                ["statement"],
            ),
        ),
        ExtractTemplate(
            "people",
            "The people and organisations the videos mention, with their role in what is said.",
            _list_of(
                "people",
                {
                    "name": _text("Their name as said."),
                    "role": _optional("Their job, title or part in the story."),
                    "description": _optional("What the videos say about them."),
                },
                ["name"],
            ),
        ),
        ExtractTemplate(
            "products",
            "The products the videos show or review, with maker, price as said, the verdict, pros and cons.",
            _list_of(
                "products",
                {
                    "name": _text("The product's name."),
                    "maker": _optional("Who makes it."),
                    "price": _optional("The price as said, with its currency."),
                    "verdict": _optional("The reviewer's overall judgement."),
                    "pros": {"type": "array", "items": {"type": "string"}},
                    "cons": {"type": "array", "items": {"type": "string"}},
                },
                ["name", "pros", "cons"],
            ),
        ),
        ExtractTemplate(
            "steps",
            "The steps of what the videos show how to do, in order.",
            {
                "type": "object",
                "properties": {
                    "goal": _optional("What the steps achieve."),
                    "steps": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "order": {"type": "integer", "minimum": 1},
                                "action": _text("What to do."),
                                "details": _optional("Tools, amounts, warnings."),
                            },
                            "required": ["order", "action"],
                            "additionalProperties": False,
                        },
                    },
                },
                "required": ["steps"],
                "additionalProperties": False,
            },
        ),
        ExtractTemplate(
            "recipe",
            "The recipe cooked in the videos: the dish, servings, ingredients with quantities, the steps.",
            {
                "type": "object",
                "properties": {
                    "dish": _optional("The dish's name."),
                    "servings": {"type": ["integer", "null"], "minimum": 1},
                    "ingredients": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "item": _text("The ingredient."),
                                "quantity": _optional("How much."),
                            },
                            "required": ["item"],
                            "additionalProperties": False,
                        },
                    },
                    "steps": {"type": "array", "items": {"type": "string", "minLength": 1}},
                },
                "required": ["ingredients", "steps"],
                "additionalProperties": False,
            },
        ),
        ExtractTemplate(
            "timeline",
            "The dated events the videos tell of, in the order they happened.",
            _list_of(
                "events",
                {"when": _text("The date or period, as said."), "what": _text("What happened.")},
                ["when", "what"],
            ),
        ),
        ExtractTemplate(
            "quotes",
            "Notable quotes, word for word as spoken, with who said them.",
            _list_of(
                "quotes",
                {"speaker": _optional("Who said it."), "text": _text("The words, exactly as spoken.")},
                ["text"],
            ),
        ),
    )
}

BRIEF_TEMPLATES: dict[str, BriefTemplate] = {
    template.name: template
    for template in (
        BriefTemplate(
            "research",
            "The main claims the videos make about the question (or, without one, about their shared "
            "subject): what they agree on, where they disagree, and what they leave open.",
        ),
        BriefTemplate(
            "buyer-guide",
            "A buyer's view: the models and years discussed, the best and worst ones, known issues, prices "
            "(with the date they were said), mileage or wear, and what to inspect before buying.",
        ),
    )
}
DEFAULT_BRIEF_TEMPLATE = "research"


def _unknown(what: str, name: object, known: dict[str, Any], other: str) -> VidError:
    return VidError(
        ErrorCode.BAD_REQUEST,
        f"There is no {what} template {str(name)[:40]!r}.",
        hint="Give template as one of: " + ", ".join(known) + f"; or {other}.",
    )


def extract_template(name: str) -> ExtractTemplate:
    found = EXTRACT_TEMPLATES.get(name.strip().lower())
    if found is None:
        raise _unknown("extraction", name, EXTRACT_TEMPLATES, "give your own JSON Schema as schema")
    return found


def brief_template(name: str | None) -> BriefTemplate:
    if name is None:
        return BRIEF_TEMPLATES[DEFAULT_BRIEF_TEMPLATE]
    found = BRIEF_TEMPLATES.get(name.strip().lower())
    if found is None:
        raise _unknown("brief", name, BRIEF_TEMPLATES, "leave it out for research")
    return found
