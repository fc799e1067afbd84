"""What every layer may use, with nothing of tinyattn's own below it.

- ``type_names.py``: how error messages name a type (with its module);
- ``layers.py``: the table of the architecture's layers (``docs/architecture.md`` shows it);
- ``malloc.py``: glibc's malloc settings for array-heavy training (set by ``import tinyattn``).
"""
