"""Stage 6: results → text. Pure: returns strings, never prints."""
