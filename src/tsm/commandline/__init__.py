"""The command-line grammar that the CLI and the daemon share: the daemon answers a `tsm
search` command line the thin client forwarded (daemon/forwarded.py) with the parser the CLI
registers, so both read it alike and fail alike. Light: argparse and the core's request."""
