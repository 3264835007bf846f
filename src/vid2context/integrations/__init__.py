"""Integrations with services outside vid2context: webhooks (``webhooks.py`` and its parts)."""
