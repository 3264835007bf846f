"""``python -m vid2context`` is the ``vid2context`` command."""

from .cli import main

raise SystemExit(main())
