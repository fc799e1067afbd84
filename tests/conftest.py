import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from hypothesis import settings  # noqa: E402

settings.register_profile("ci", max_examples=25, deadline=None)
settings.register_profile("dev", max_examples=15, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(config, items):
    """The op-registry test checks what the other tests exercised: run it last."""
    last = [i for i in items if "test_registry" in i.nodeid]
    rest = [i for i in items if "test_registry" not in i.nodeid]
    items[:] = rest + last


@pytest.fixture(autouse=True)
def _seed():
    import numpy as np

    import tinyattn

    tinyattn.manual_seed(0)
    np.random.seed(0)
