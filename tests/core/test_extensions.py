"""The engine's extension seam: each autograd feature turns its extension point on through
``extensions`` and off again when it ends, and the engine runs it from there."""

from __future__ import annotations

import warnings

import pytest

import tinyattn
from tinyattn.autograd import forward_ad, graph
from tinyattn.core.extensions import extensions


def test_every_feature_is_off_by_default():
    assert extensions.anomaly is None
    assert extensions.saved_hooks_active == 0
    assert extensions.forward_ad_apply is None
    assert extensions.tracers == []
    # the features that are always available registered themselves on import
    assert extensions.tensor_xp is not None and extensions.node_hooks is not None


def test_anomaly_mode_plugs_in_and_out():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tinyattn.autograd.detect_anomaly(check_nan=False):
            assert extensions.anomaly is not None and not extensions.anomaly.check_nan
            x = tinyattn.ones(2, requires_grad=True)
            y = x.exp()
            assert "_forward_stack" in y.grad_fn.__dict__  # Function.apply called the mode
    assert extensions.anomaly is None


def test_saved_tensors_hooks_count_their_blocks():
    packed = []
    with graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
        assert extensions.saved_hooks_active == 1
        assert extensions.innermost_saved_tensors_hooks() is not None
        x = tinyattn.ones(2, requires_grad=True)
        x.exp().sum().backward()
    assert extensions.saved_hooks_active == 0 and packed
    assert extensions.innermost_saved_tensors_hooks() is None


def test_disabled_saved_tensors_hooks_raise_through_the_seam():
    with graph.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    assert extensions.saved_hooks_active == 0


def test_forward_ad_level_sets_the_custom_function_entry():
    with forward_ad.dual_level():
        assert extensions.forward_ad_apply is not None
    assert extensions.forward_ad_apply is None


def test_a_tracer_sees_each_node_the_engine_runs():
    seen = []

    class Tracer:
        def _record(self, node, grad_output, input_grads, seconds):
            seen.append(node.name())

    tracer = Tracer()
    extensions.add_tracer(tracer)
    try:
        x = tinyattn.ones(2, requires_grad=True)
        (x * 2).sum().backward()
    finally:
        extensions.remove_tracer(tracer)
    assert seen == ["SumBackward0", "MulBackward0"]
    assert extensions.tracers == []
