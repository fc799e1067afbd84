"""``import tinyattn`` keeps freed arrays in glibc's heap (``tinyattn/foundations/malloc.py``): an
array allocated again after a free reuses memory, with no page faults; the opt-out and
the user's own glibc variables leave malloc as it was."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

glibc = pytest.mark.skipif(
    not (hasattr(os, "confstr") and (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")),
    reason="malloc tuning applies to glibc only",
)

PROBE = """
import resource, numpy as np
import tinyattn
def step():  # a training step's pattern: arrays of a few MiB, all freed at its end
    arrays = [np.empty(n << 17) for n in (4, 8, 3, 12, 6, 10)]  # 4..12 MiB, 43 in all
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for a in arrays:
        a.fill(1.0)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
step()
print(max(step(), step()))
"""


def _faults(**env) -> int:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    full_env.pop("TINYATTN_MALLOC", None)
    full_env.update(env)
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=full_env, check=True
    )
    return int(result.stdout.split()[-1])


# A step touches 43 MiB: 11,008 pages of 4 KiB, or ~22 huge pages where the kernel uses
# them; glibc's own settings fault in at least ~2,800 pages a step here.
FRESH = 500


@glibc
def test_freed_arrays_are_reused_without_page_faults():
    assert _faults() < FRESH // 10  # the second and third steps reuse the heap
    assert _faults(TINYATTN_MALLOC="default") > FRESH  # glibc's own: fresh pages a step


@glibc
def test_the_users_glibc_variables_win():
    assert _faults(MALLOC_TRIM_THRESHOLD_="131072") > FRESH


@glibc
def test_glibc_tunables_win_too():
    tunables = "glibc.malloc.trim_threshold=131072"
    assert _faults(GLIBC_TUNABLES=tunables) > FRESH
