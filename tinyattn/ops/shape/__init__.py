"""Shape ops: views, rearrangements (cat, flip, tril ...), shape ops composed from them, strided views."""

from . import composites, rearrange, strided, views
