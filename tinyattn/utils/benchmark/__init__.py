"""``tinyattn.utils.benchmark``: torch's ``Timer``, ``Measurement`` and ``Compare``.

>>> import tinyattn as torch
>>> import tinyattn.utils.benchmark as benchmark
>>> x = torch.ones(4, 4)
>>> m = benchmark.Timer(stmt="x @ x", globals={"x": x}).blocked_autorange(min_run_time=0.01)
>>> m.mean > 0 and m.median > 0
True

``print(m)`` shows torch's layout (title, ``Median: ... us``, ``IQR: ...``,
``N measurements, M runs per measurement, T thread``).
"""

from .common import Measurement, TaskSpec, select_unit, trim_sigfig
from .compare import Compare
from .timer import Language, Timer

__all__ = ["Compare", "Language", "Measurement", "TaskSpec", "Timer", "select_unit", "trim_sigfig"]
