"""The resident daemon: socket protocol, thin client, server, single writer, file watcher."""
