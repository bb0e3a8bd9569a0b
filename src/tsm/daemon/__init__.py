"""The resident daemon, one more interface to the core: the socket server, the ops it maps
to the core's operations, the single writer, background embedding and the file watcher."""
