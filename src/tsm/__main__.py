"""`python -m tsm` → the CLI."""

from .cli.main import main

raise SystemExit(main())
