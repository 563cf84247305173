"""The CLI's library thread policy: every pool one thread unless its variable is set, including numpy's OpenBLAS,
which importing the CLI has already loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = (
    "import json, threadpoolctl, memcore.commands.run as c; resized = c.pin_library_threads(); "
    "print(json.dumps([resized, {i['internal_api']: i['num_threads'] for i in threadpoolctl.threadpool_info()}]))"
)


def _probe(**env: str) -> tuple[list[str], dict[str, int]]:
    base = {
        k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    }
    out = subprocess.run([sys.executable, "-c", PROBE], env={**base, **env}, capture_output=True, text=True, check=True)
    resized, pools = json.loads(out.stdout)
    return resized, pools


def test_numpy_blas_loaded_before_the_pin_is_resized_to_one_thread() -> None:
    resized, pools = _probe()
    assert pools["openblas"] == 1
    if (os.cpu_count() or 1) > 1:  # with one core OpenBLAS starts on one thread: nothing to resize
        assert any(r.startswith("openblas") for r in resized)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenBLAS caps its threads at the cores")
def test_a_variable_the_user_set_is_kept() -> None:
    resized, pools = _probe(OPENBLAS_NUM_THREADS="2")
    assert pools["openblas"] == 2
    assert resized == []
