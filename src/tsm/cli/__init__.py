"""Stage 8b: parse arguments, pick a backend, render, exit with the right code."""
