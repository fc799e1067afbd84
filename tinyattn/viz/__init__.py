"""Teaching tools: draw the backward graph, show attention maps in the terminal.

``graph(tensor)`` returns Graphviz DOT text for the graph that produced
``tensor`` (rendered to SVG/PNG when the ``dot`` program is installed);
``attention_map(weights)`` prints a Unicode heatmap and, with matplotlib,
draws a figure.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np

from ..tensor_api.tensor import Tensor
from ..autograd.function import AccumulateGrad
from ..foundations.type_names import type_name

_SHADES = " ░▒▓█"


def _dtype_name(np_dtype) -> str:
    return np.dtype(np_dtype).name


def graph(tensor: Tensor, params: dict | None = None, path: str | None = None) -> str:
    """The backward graph of ``tensor`` as DOT text.

    Nodes show the op name, output shape and dtype; leaves show parameter names
    when ``params`` (e.g. ``dict(model.named_parameters())``) is given. With
    ``path`` ending in .svg/.png/.pdf the graph is rendered with Graphviz's
    ``dot`` (a ``RuntimeError`` explains how to install it when it is missing);
    with any other suffix the DOT text is written there.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"graph(): expected a Tensor, got {type_name(tensor)}")
    if tensor.grad_fn is None:
        raise ValueError("graph(): this tensor has no grad_fn (it is a leaf or requires no grad)")
    names = {id(p): n for n, p in (params or {}).items()}
    lines = ["digraph backward {", '  rankdir="BT";', '  node [shape=box, fontname="monospace"];']
    ids: dict[int, str] = {}
    stack, order = [tensor.grad_fn], []
    while stack:
        node = stack.pop()
        if id(node) in ids:
            continue
        ids[id(node)] = f"n{len(ids)}"
        order.append(node)
        stack.extend(n for n in node.next_nodes if n is not None)
    # a node's output is its consumers' input: its (shape, dtype) is in their input_meta
    out_meta = {id(tensor.grad_fn): (tuple(tensor.shape), tensor._data.dtype)}
    for node in order:
        for child, meta in zip(node.next_nodes, node.input_meta):
            if child is not None:
                out_meta.setdefault(id(child), meta)
    for node in order:
        nid = ids[id(node)]
        if isinstance(node, AccumulateGrad):
            var = node.variable
            label = names.get(id(var), "leaf")
            text = f"{label}\\n{list(var.shape)} {var.dtype.name}"
            lines.append(f'  {nid} [label="{text}", style=filled, fillcolor="lightblue"];')
        else:
            meta = out_meta.get(id(node))
            shape = f"{list(meta[0])} {_dtype_name(meta[1])}" if meta else ""
            lines.append(f'  {nid} [label="{node.name()}\\n{shape}"];')
        for child in node.next_nodes:
            if child is not None:
                lines.append(f"  {ids[id(child)]} -> {nid};")
    lines.append("}")
    dot = "\n".join(lines)
    if path is not None:
        _render(dot, Path(path))
    return dot


def _render(dot: str, path: Path) -> None:
    fmt = path.suffix.lstrip(".").lower()
    if fmt not in ("svg", "png", "pdf"):
        path.write_text(dot)
        return
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError(
            "graph(): rendering needs Graphviz's `dot` program, which is not installed "
            "(Debian/Ubuntu: apt-get install graphviz). The DOT text is returned; save it with "
            "a .dot suffix instead."
        )
    subprocess.run([exe, f"-T{fmt}", "-o", str(path)], input=dot.encode(), check=True)


def attention_map(
    weights,
    x_labels=None,
    y_labels=None,
    *,
    title: str | None = None,
    path: str | None = None,
    show: bool = True,
) -> str:
    """A terminal heatmap of a 2-D attention matrix (rows: queries, columns: keys).

    Darker cells carry more weight. Returns the text (and prints it when ``show``);
    with ``path`` and matplotlib installed, also saves a figure there.
    """
    w = weights.detach()._data if isinstance(weights, Tensor) else np.asarray(weights)
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 2:
        raise ValueError(
            f"attention_map(): expected a 2-D (queries, keys) matrix, got shape {list(w.shape)}"
        )
    rows, cols = w.shape
    xl = [str(x) for x in (x_labels if x_labels is not None else range(cols))]
    yl = [str(y) for y in (y_labels if y_labels is not None else range(rows))]
    if len(xl) != cols or len(yl) != rows:
        raise ValueError(
            f"attention_map(): got {len(yl)} y_labels and {len(xl)} x_labels for a matrix of shape "
            f"{list(w.shape)}"
        )
    top = max(float(np.nanmax(w)), 1e-12) if w.size else 1.0
    width = max((len(y) for y in yl), default=1)
    lines = [title] if title else []
    lines.append(" " * (width + 1) + "".join(x[:2].rjust(2) for x in xl))
    for label, row in zip(yl, w):
        cells = "".join(
            2 * _SHADES[min(int(v / top * (len(_SHADES) - 1) + 0.5), len(_SHADES) - 1)]
            if np.isfinite(v)
            else "??"
            for v in row
        )
        lines.append(label.rjust(width) + " " + cells)
    text = "\n".join(lines)
    if show:
        print(text)
    if path is not None:
        _save_figure(w, xl, yl, title, path)
    return text


def _save_figure(w, xl, yl, title, path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise RuntimeError(
            "attention_map(path=...): saving a figure needs matplotlib (pip install 'tinyattn[viz]')"
        ) from err
    fig, ax = plt.subplots(figsize=(1 + 0.4 * len(xl), 1 + 0.4 * len(yl)))
    im = ax.imshow(w, cmap="Blues", vmin=0)
    ax.set_xticks(range(len(xl)), xl)
    ax.set_yticks(range(len(yl)), yl)
    ax.set_xlabel("keys")
    ax.set_ylabel("queries")
    if title:
        ax.set_title(title)
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
