"""The MCP tools the server lists, by name: one set for every test that checks the catalogue (in
process, over stdio and over HTTP), so a new tool is named once here."""

from __future__ import annotations

TOOLS = {
    "search_transcript",
    "ask",
    "get_transcript",
    "get_metadata",
    "list_formats",
    "get_outline",
    "get_section",
    "list_caption_languages",
    "choose_caption_track",
    "list_items",
    "get_comments",
    "export_context_pack",
    "list_models",
    "list_collections",
    "create_collection",
    "add_to_collection",
    "get_collection",
    "export_obsidian",
    "export_notion",
    "get_job",
    "research_videos",
    "get_key_moments",
    "get_video_context",
    "build_brief",
    "extract",
    "digest_videos",
    "get_skip_segments",
    "find_duplicates",
    "open_transcript_viewer",
    "watch_live",
}
