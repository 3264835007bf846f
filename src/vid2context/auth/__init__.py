"""Who may call: hosted mode's accounts (GitHub sign-in, account keys, quotas).

``accounts`` (shapes and the store protocol), ``accounts_sql`` (SQLite and D1, and memory),
``github`` (GitHub's OAuth web flow and ``GET /user``), ``signin`` (state, sessions, cookies),
``quotas`` (the daily meters), ``hosted`` (the one object the middleware, the routes and the
OAuth consent page ask who a request is).
"""
