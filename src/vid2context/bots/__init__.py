"""Chat bots: Telegram, Discord and Slack send us what people write; we answer in the chat.

A pasted video link gets the outline with links back to each moment; a question gets an ``ask``
answer with checked citations when a language model is set up. Each platform's route
(``api/bots.py``) checks the platform's signature first (``signatures.py``), answers within the
platform's time limit, and queues the work as a ``bot_reply`` job (``kind.py``), which builds the
answer once (``replies.py``) and posts it through the platform's documented API
(``platforms.py``), rendered in the platform's own markup (``message.py``).
"""
