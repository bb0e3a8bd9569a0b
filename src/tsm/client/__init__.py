"""Talking to the daemon from another process: the wire protocol both sides speak, the
daemon's lifecycle (start on demand, stop, state), a remote implementation of the core's
Knowledge, and `connect()`, which picks the daemon when one answers and the in-process
core otherwise. Importing this package loads nothing: the thin client imports only
`protocol` and `peer`."""
