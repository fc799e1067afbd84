"""Weights in and out: tinyattn's own checkpoints, torch's files and safetensors.

Public entry points keep their torch names elsewhere: ``tinyattn.save`` / ``tinyattn.load``
and ``tinyattn.serialization`` (``io/serialization.py``), ``tinyattn.safetensors``
(``io/safetensors.py``). See docs/weights.md.
"""
