"""The Hydra side of renamed config keys (:mod:`memcore.config_aliases`): a sweep's ``hydra.sweeper.params``,
written in a YAML preset with an old key name, is respelled before the sweeper expands it."""

from __future__ import annotations

import logging
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, open_dict, read_write

from memcore.config_aliases import RENAMED, renamed_line

log = logging.getLogger("memcore")


class RenamedSweepKeys(Callback):
    """Registered in ``configs/run.yaml`` (``hydra.callbacks``): renames old keys among the sweep's params in
    place (order kept), one warning line per old key."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        params = config.hydra.sweeper.get("params")
        if not params or not any(str(k) in RENAMED for k in params):
            return
        items = [(str(k), v) for k, v in params.items()]
        with read_write(params), open_dict(params):
            for key, _ in items:
                del params[key]
            for key, value in items:
                params[RENAMED.get(key, key)] = value
        for key, _ in items:
            if key in RENAMED:
                log.warning(renamed_line(key))
