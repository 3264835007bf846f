"""Outside services: one module per service (SponsorBlock, fingerprints for duplicates), and webhooks
(``webhooks.py`` and its parts)."""
