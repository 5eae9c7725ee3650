"""``python -m act_backend``: the ``act-backend`` command."""

from act_backend.cli import main

raise SystemExit(main())
