"""The measurements of `make bench`, one module per section; each returns a dataclass of results.py."""
