"""`python -m tsm` → the CLI."""

from .cli.entry import main

raise SystemExit(main())
