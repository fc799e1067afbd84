"""Adapters that only add torch's names and keywords to tinyattn's own functions.

Nothing here computes: each module takes what torch's signatures accept and tinyattn
has no use for (``layout=torch.strided``, ``pin_memory=False``), checks that the value
asks for nothing tinyattn lacks, and calls the real function.
"""
