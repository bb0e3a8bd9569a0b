"""The CLI: parse arguments, call the core (client/connect.py), print, exit with the
contract's code."""
