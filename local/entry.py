"""The local app for any ASGI server: ``uvicorn local.entry:app``, ``hypercorn local.entry:app``.

``vid2context serve`` runs the same app under granian with its checks (API keys before an open
bind, graceful shutdown); use this file when you bring your own server. Settings come from the
environment (``VID2CONTEXT_*``, see site/configuration.md); the SQLite library lives under
``VID2CONTEXT_HOME``.
"""

from vid2context.cli import local_app

app = local_app()
