"""``ModuleList`` prints as torch's: a run of children that print alike is one line."""

import pytest

import tinyattn
import tinyattn.nn as nn

try:
    import torch
except ImportError:
    torch = None

# torch 2.13's output for the same lists, stored as data (the test runs without torch too)
EXPECTED = {
    "runs": (
        "ModuleList(\n"
        "  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
        "  (3): ReLU()\n"
        "  (4): Linear(in_features=2, out_features=2, bias=True)\n"
        ")"
    ),
    "nested": (
        "ModuleList(\n"
        "  (0-1): 2 x Sequential(\n"
        "    (0): Linear(in_features=2, out_features=3, bias=True)\n"
        "    (1): ReLU()\n"
        "  )\n"
        ")"
    ),
    "different": (
        "ModuleList(\n"
        "  (0): Linear(in_features=2, out_features=2, bias=True)\n"
        "  (1): Linear(in_features=2, out_features=3, bias=True)\n"
        ")"
    ),
    "empty": "ModuleList()",
}


def _lists(lib):
    n = lib.nn
    return {
        "runs": n.ModuleList([n.Linear(2, 2) for _ in range(3)] + [n.ReLU(), n.Linear(2, 2)]),
        "nested": n.ModuleList([n.Sequential(n.Linear(2, 3), n.ReLU()) for _ in range(2)]),
        "different": n.ModuleList([n.Linear(2, 2), n.Linear(2, 3)]),
        "empty": n.ModuleList(),
    }


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_module_list_repr_groups_runs(case):
    assert repr(_lists(tinyattn)[case]) == EXPECTED[case]


@pytest.mark.skipif(torch is None, reason="torch not installed: the stored strings are checked")
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_stored_strings_are_torchs(case):
    assert repr(_lists(torch)[case]) == EXPECTED[case]


def test_a_model_with_repeated_blocks_prints_one_line_per_run():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    text = repr(nn.TransformerEncoder(layer, 3))
    assert "(0-2): 3 x TransformerEncoderLayer(" in text
