"""Indexing: gather/index_select/masked ops, scatter and index writes (index_put, put, index_reduce)."""

from . import indexing, scatter, writes
