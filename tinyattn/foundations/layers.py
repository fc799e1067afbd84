"""The layers of tinyattn, bottom to top: the one table of the architecture.

A module may import its own layer and the layers below it, so a reader can start at the
bottom and never meet a name that is not yet explained. ``tests/test_layering.py`` checks
every import against this table and ``docs/architecture.md`` shows it (a test checks that
the document's table is :func:`markdown_table`; ``python -m tinyattn.foundations.layers`` prints it).

Modules are named by their dotted path below ``tinyattn``; the longest listed prefix of a
module's path gives its layer, and a module listed nowhere is in the top layer.
"""

from __future__ import annotations

# (layer, name, modules, what it is, what it may import)
TABLE: tuple[tuple[int, str, tuple[str, ...], str, str], ...] = (
    (
        0,
        "core and foundations",
        (
            "core",
            "random",
            "_version",
            "foundations",
            "shims.distributed",
            "torch_surface.out_table",
        ),  # fmt: skip
        "`core/`: `TensorBase` (a tensor's autograd fields), the op base `Function` (on "
        "arrays) and `Node`, the backward engine and its one extension seam, grad mode, "
        "dtypes and promotion, `numpy_xp`, the CPU device and `Size`; the RNG (`random/`), "
        "this table, how messages name a type, the malloc settings, the no-op `distributed` shim, the names "
        "that take `out=` (data)",
        "NumPy (`core/` imports only itself)",
    ),
    (
        1,
        "autograd",
        ("autograd",),
        "what plugs into the core's seam: torch's user-level `autograd.Function`, "
        "`autograd.graph` hooks, anomaly mode, forward AD, gradcheck, the trace, `tensor_xp` "
        "(the namespace of create_graph formulas)",
        "layer 0 (`xp.py`'s `tensor_xp` and `functional.py` call ops at call time)",
    ),
    (
        2,
        "kernels",
        ("kernels",),
        "the numba attention, GELU, LayerNorm, pooling and Adam kernels and their NumPy "
        "twins; the one softmax formula; BLAS matrix products; the SDPA path switches",
        "layer 0, NumPy, numba (lazily)",
    ),
    (
        3,
        "tensor",
        ("tensor_api", "torch_surface.tensor_inplace", "torch_surface.tensor_longtail"),
        "`Tensor` = `TensorBase` + the API; every method forwards to an op",
        "layers 0-2 (ops at call time)",
    ),
    (
        4,
        "ops",
        ("ops", "linalg", "fft", "torch_surface.out"),
        "one `Function` per op, by family (`ops/elementwise`, `reduce`, `shape`, `index`, "
        "`linalg`, `creation`, `special`, `sorting`, `windows`): forward and backward side "
        "by side; `torch.linalg`; `torch.fft`; the `out=` wrapper",
        "layers 0-3",
    ),
    (
        5,
        "nn",
        ("nn",),
        "`nn/functional/` (one file per concept), `nn/modules/`, `nn/attention/`, `nn/init.py`: "
        "layers, losses, attention",
        "layers 0-4",
    ),
)
TOP = 6
TOP_ROW = (
    TOP,
    "the rest",
    (
        "optim",
        "utils",
        "io",
        "models",
        "shims",
        "torch_surface",
        "sparse",
        "explain",
        "viz",
        "bench",
        "demo",
    ),
    "training, data, checkpoints and weight files, the CPU shims, torch's extra names, "
    "sparse COO tensors, teaching tools",
    "anything below",
)

# module (dotted below ``tinyattn``) -> layer
LAYERS: dict[str, int] = {module: row[0] for row in TABLE for module in row[2]}

# Imports that reach up on purpose, each with its reason: (importer, imported) prefixes.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {
    ("tensor_api", "ops"): "operators and methods call the ops at call time",
    (
        "tensor_api",
        "tinyattn",
    ): "the generated methods and repr reach the ops through the package namespace at call time",
    ("torch_surface.tensor_inplace", "ops"): "in-place composite forms (addmm_ ...) call the ops",
    ("torch_surface.tensor_inplace", "tinyattn"): "the same, through the package namespace",
    ("torch_surface.tensor_longtail", "ops"): "older matrix functions, *_copy ... call the ops",
    ("torch_surface.tensor_longtail", "tinyattn"): "Tensor.hardshrink / prelu: the functional form",
    (
        "nn",
        "shims.einops",
    ): "the einops layers (nn.Rearrange ...) share the einops backend's registration",
    ("tensor_api", "torch_surface"): "Tensor.type / is_contiguous / cpu read torch's legacy types "
    "and layouts at call time",
    ("nn", "torch_surface"): "nn.functional.softmax / log_softmax take torch.nn.functional's "
    "argument order",
}

# Files that sit above the ops by nature, though they live in the autograd package (as
# torch.autograd.functional does): they differentiate through ops at call time.
ALLOWED_FILES: dict[str, str] = {
    "autograd/xp.py": "tensor_xp builds create_graph formulas from differentiable ops",
    "autograd/functional.py": "jacobian/hessian/... run the user's function on ops",
}


def layer(module: str) -> int:
    """The layer of ``module`` (dotted below ``tinyattn``): that of its longest listed prefix."""
    keys = [k for k in LAYERS if module == k or module.startswith(k + ".")]
    return LAYERS[max(keys, key=len)] if keys else TOP


def _cell(modules: tuple[str, ...]) -> str:
    return ", ".join(f"`{m}`" for m in modules)


def markdown_table() -> str:
    """The layer table as docs/architecture.md shows it (Markdown)."""
    lines = ["| layer | modules | what it is | may import |", "|---|---|---|---|"]
    for number, name, modules, what, imports in (*TABLE, TOP_ROW):
        lines.append(f"| {number}. {name} | {_cell(modules)} | {what} | {imports} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
