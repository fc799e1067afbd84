"""Elementwise ops: arithmetic, unary math and its in-place forms, two-input math, comparisons and logic, trigonometry, integer and bit-level math."""

from . import arithmetic, binary, compare, integer_math, logic, trig, unary, unary_inplace
