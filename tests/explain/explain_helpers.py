"""Helpers of the explain tests: the README's scripts, running the command, reading the
page's embedded data back. (A module of its own: ``conftest`` is a name every test folder
uses, so importing names from it depends on which folder's conftest Python loaded last.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_block(heading: str) -> str:
    """The first ```python block under ``heading`` in the README."""
    text = (ROOT / "README.md").read_text()
    section = text.split(heading, 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def page_data(html: str) -> dict:
    """The JSON the page embeds (what its script reads)."""
    raw = re.search(r'<script type="application/json" id="explain-data">(.*?)</script>', html, re.S)
    return json.loads(raw.group(1).replace("<\\/", "</"))


def explain_script(script: Path, out: Path, *extra: str) -> str:
    """``python -m tinyattn explain script --out out``, in this process; returns the page."""
    from tinyattn.__main__ import main

    assert main(["explain", str(script), "--out", str(out), *extra]) == 0
    return out.read_text()


SELF_ATTENTION = """
import tinyattn as torch
import tinyattn.nn as nn

torch.manual_seed(0)


class SelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.d = heads, d
        self.w_q = nn.Linear(d, d)
        self.w_k = nn.Linear(d, d)
        self.w_v = nn.Linear(d, d)

    def forward(self, x, mask):
        B, L, _ = x.shape
        q = self.w_q(x).view(B, L, self.heads, -1).transpose(1, 2)
        k = self.w_k(x).view(B, L, self.heads, -1).transpose(1, 2)
        v = self.w_v(x).view(B, L, self.heads, -1).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / (self.d // self.heads) ** 0.5
        scores = scores.masked_fill(mask == 0, -1e9)
        P = torch.softmax(scores, dim=-1)
        out = P @ v
        return out.transpose(1, 2).reshape(B, L, self.d)


attn = SelfAttention(8, 2)
x = torch.randn(2, 4, 8, requires_grad=True)
mask = torch.tril(torch.ones(4, 4))
loss = (attn(x, mask) ** 2).sum()
loss.backward()
"""
