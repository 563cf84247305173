"""``memcore-run [overrides…]``: one run, or a sweep with ``-m``; the Hydra app over ``configs/`` at the repository
root. The run's log is ``<run dir>/cli.log`` (``hydra.job.name`` in ``configs/run.yaml``)."""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException, MissingConfigException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException
from threadpoolctl import ThreadpoolController

from memcore import config as schema
from memcore.commands.shared import quiet_http_logs, user_errors, viewer_hint
from memcore.config import CONFIG_DIR
from memcore.config_aliases import RENAMED, rename_overrides
from memcore.methods import METHODS, NO_BACKBONE, backbone_label
from memcore.pipeline.runlock import RunDirBusyError, unwritable_line
from memcore.redact import secret_overrides
from memcore.refused_run import remove_refused_run_dir
from memcore.registry import UnknownNameError
from memcore.timing import process_age_s

log = logging.getLogger("memcore")

CONFIG_PATH = str(CONFIG_DIR)


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name="run")
def _hydra_main(cfg: DictConfig) -> float | None:
    # heavy (the evaluation package: nltk, scikit-learn, pandas): loaded once Hydra has composed a valid config
    from memcore.runner import run_config

    verbose = bool(cfg.get("verbose", False))
    quiet_http_logs(verbose)
    quiet_handlers(verbose)
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    point_to_earlier_run(cfg, run_dir)
    try:
        # a multirun's later jobs share the process: only the first job's run was waiting on the imports
        hc = HydraConfig.get()
        startup = process_age_s() if hc.mode != RunMode.MULTIRUN or int(hc.job.num) == 0 else None
        result = run_config(cfg, run_dir, startup_s=startup)
    except RunDirBusyError as exc:
        if not (exc.holder and hc.mode == RunMode.MULTIRUN and cfg.get("on_locked_run") == "skip"):
            refuse(exc, run_dir, cfg)
        line = skipped_line(run_dir, exc.holder)
        log_to_files(logging.WARNING, line)
        print(line, file=sys.stderr)
        return None
    except user_errors() as exc:
        refuse(exc, run_dir, cfg)
    if cfg.get("print_table", True):
        print()
        print(result.table)
        print(f"\nresults: {result.run_dir}")

        print(viewer_hint([result.run_dir], Path(result.run_dir) / "view"))
    overall = result.metrics.get("overall", {})
    return overall.get("f1")


def refuse(exc: BaseException, run_dir: Path, cfg: DictConfig) -> NoReturn:
    """A run refused before any work: one ``error:`` line, exit 2; the run dir goes when Hydra made it for this
    invocation alone (:func:`remove_refused_run_dir`), else its log keeps the line."""
    if not remove_refused_run_dir(run_dir, Path(str(cfg.paths.root))):
        log_to_files(logging.ERROR, str(exc))
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(2)


def skipped_line(run_dir: Path, holder: str) -> str:
    """What a sweep job says when another process writes its run dir and ``on_locked_run=skip``."""
    return (
        f"skipped {run_dir}: another memcore-run writes it ({holder}) and finishes it; the sweep goes on with its "
        "next job (on_locked_run=wait waits instead)"
    )


def earlier_run_dir(cfg: DictConfig, run_dir: Path) -> Path | None:
    """For a new run dir filed under the backbone ``none`` (a run that calls no LLM): the dir the same run had
    when such runs were filed under their backbone preset's name, if a run was recorded there; else None."""
    from memcore.pipeline.rundir import RUN_STATE  # heavy (the evaluation package): not loaded by --help

    parts = run_dir.parts
    if NO_BACKBONE not in parts[:-3] or (run_dir / RUN_STATE).exists():
        return None
    try:
        if backbone_label(cfg) != NO_BACKBONE:
            return None
    except UnknownNameError:
        return None
    i = len(parts) - 4  # <dataset>/<backbone>/<protocol>/<method>/<ablation>: the backbone part
    if parts[i] != NO_BACKBONE:
        return None
    old = Path(*parts[:i], str(cfg.backbone.name), *parts[i + 1 :])
    return old if (old / RUN_STATE).exists() else None


def point_to_earlier_run(cfg: DictConfig, run_dir: Path) -> None:
    """Say where an earlier run of this config is, when it was filed under its backbone's name (see above)."""
    old = earlier_run_dir(cfg, run_dir)
    if old is not None:
        log.warning(
            "a run of this configuration made before retrieval-only runs were filed under 'none' is at %s; this "
            "run starts fresh in %s. To continue that one instead: hydra.run.dir=%s (or move it here)",
            old,
            run_dir,
            old,
        )


def quiet_handlers(verbose: bool) -> None:
    """Hydra's console and file handlers pass INFO and above unless ``verbose``: a library that sets its own
    logger to DEBUG when imported (bm25s: "Building index from IDs objects" per index) prints nothing."""
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.DEBUG if verbose else logging.INFO)


def log_to_files(level: int, message: str) -> None:
    """Write ``message`` to the root logger's file handlers only (the run's log), not to the terminal."""
    record = log.makeRecord(log.name, level, __file__, 0, message, None, None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler) and record.levelno >= handler.level:
            handler.handle(record)


#: Library thread pools (OpenMP in faiss and torch, OpenBLAS, MKL) default to one thread per process: the runner
#: parallelises itself (QA threads, build worker processes), and oversubscribed pools spin-wait — on a busy
#: 2-core machine a 3k-row faiss search took 24 ms instead of 2 ms. Export a variable to override.
#: llama.cpp is unaffected: it asks OpenMP for its thread count explicitly.
LIBRARY_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


#: The thread pools each variable sizes, as threadpoolctl names them (``user_api`` / ``internal_api``).
_POOL_OF_VAR = {"OMP_NUM_THREADS": "openmp", "OPENBLAS_NUM_THREADS": "openblas", "MKL_NUM_THREADS": "mkl"}


def pin_library_threads() -> list[str]:
    """Default every library thread pool to one thread; a variable already set is kept. A library loaded
    before this call (numpy's OpenBLAS: importing this module imports numpy) read its variable at load, so
    it is resized in place. Returns the pools resized."""
    defaulted = [var for var in LIBRARY_THREAD_VARS if var not in os.environ]
    for var in defaulted:
        os.environ[var] = "1"
    resized: list[str] = []
    for lib in ThreadpoolController().lib_controllers:  # the libraries loaded so far
        if any(_POOL_OF_VAR[v] in (lib.user_api, lib.internal_api) for v in defaulted) and lib.num_threads != 1:
            lib.set_num_threads(1)
            resized.append(f"{lib.internal_api} ({lib.prefix})")
    return resized


def stop_on_sigterm() -> None:
    """Make SIGTERM (``kill``, a batch scheduler's pre-emption) stop a run the way Ctrl-C does: after the LLM
    calls in flight, with every finished item kept, so a rerun resumes. A background job started by a
    non-interactive shell ignores SIGINT, so SIGTERM is the signal that reaches it."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    signal.signal(signal.SIGTERM, interrupt)


def composition_error_line(exc: BaseException, argv: list[str]) -> str:
    """One line for a Hydra composition error. An override of a key the config does not have names the key, the
    value given and the keys allowed there; anything else is Hydra's message (and its cause) on one line."""
    import re

    text = str(exc)
    cause = exc.__cause__
    m = re.search(r"Could not override '([^']+)'", text)
    if m and cause is not None and "not in struct" in str(cause):
        key = m.group(1)
        if key in RENAMED:  # an old spelling Hydra saw without memcore-run's respelling (a sweep file's params)
            return f"{key} is renamed: use {RENAMED[key]}"
        value = next((a.split("=", 1)[1] for a in argv if re.fullmatch(rf"[+~]*{re.escape(key)}=.*", a)), "?")
        section, _, leaf = key.rpartition(".")
        label, keys = _section_keys(section, argv)
        if leaf in keys:  # a schema key this preset leaves at its default: Hydra wants it added
            return f"{key}={value}: the selected {section or 'run'} config does not set {leaf!r}; add it with +{key}={value}"
        known = ", ".join(keys) if keys else "see configs/"
        return f"{key}={value} is not allowed: unknown key {leaf!r}; {label} keys: {known}"
    parts = [text, str(cause) if cause is not None else ""]
    lines = [ln.strip() for p in parts for ln in p.splitlines() if ln.strip()]
    return " ".join(ln for ln in lines if not ln.startswith(("full_key:", "object_type=", "reference_type=")))


def _default_option(group: str) -> str:
    """The option of config group ``group`` that ``configs/run.yaml``'s defaults list selects."""
    for entry in OmegaConf.load(CONFIG_DIR / "run.yaml").get("defaults") or []:
        if isinstance(entry, DictConfig) and group in entry:
            return str(entry[group])
    raise KeyError(f"configs/run.yaml selects no default {group}")


def _section_keys(section: str, argv: list[str]) -> tuple[str, list[str]]:
    """(label, keys) of a config section; ``method`` reads the method named on the command line."""
    import dataclasses

    # heavy (the evaluation package); needed only to word a composition error about a method key
    from memcore.validation import method_config_keys

    method = next((a.split("=", 1)[1] for a in reversed(argv) if a.startswith("method=")), None)
    method = method or _default_option("method")
    if section == "method":
        return f"method {method}", method_config_keys(method)
    classes = {
        "": schema.RunConfig,
        "backbone": schema.BackboneConfig,
        "embedder": schema.EmbedderConfig,
        "dataset": schema.DatasetConfig,
        "protocol": schema.ProtocolConfig,
        "eval": schema.EvalConfig,
        "paths": schema.PathsConfig,
    }
    if section == "ablation":
        classes["ablation"] = schema.ablation_schema(method) if method in METHODS else schema.default_ablation_schema()
    cls = classes.get(section)
    keys = sorted(f.name for f in dataclasses.fields(cls)) if cls is not None else []
    return (f"{section}.*" if section else "top-level"), keys


def _raised_in_run(exc: BaseException) -> bool:
    """Whether ``exc`` came from inside the run (``_hydra_main``), not from Hydra setting up its run dir."""
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "_hydra_main" and code.co_filename == __file__:
            return True
        tb = tb.tb_next
    return False


#: The OmegaConf resolver the run dir names its backbone part with (configs/run.yaml).
BACKBONE_DIR_RESOLVER = "memcore.backbone_dir"


def _backbone_dir(*, _root_: DictConfig) -> str:
    """The backbone part of a run dir: ``backbone.name``, or ``none`` for a run that calls no LLM. A method name
    that is not known keeps ``backbone.name`` here; the run itself then fails with the did-you-mean line."""
    try:
        return backbone_label(_root_)
    except UnknownNameError:
        return str(_root_.backbone.name)


def register_resolvers() -> None:
    """Register the run's OmegaConf resolvers (idempotent). Hydra hands the registered resolvers on to the jobs of
    a sweep (joblib, submitit), so registering in the launching process is enough."""
    if not OmegaConf.has_resolver(BACKBONE_DIR_RESOLVER):
        OmegaConf.register_new_resolver(BACKBONE_DIR_RESOLVER, _backbone_dir)


#: Hydra's note that a launcher yaml fills the plugin's ConfigStore schema of the same name: harmless (the yaml
#: files in configs/hydra/launcher/ say so) and raised at each composition from a different call site, so the
#: "once" action of the warnings module cannot fold it; it is not shown.
SCHEMA_MATCH_WARNING = r"\s*'hydra/launcher/[^']+' is validated against ConfigStore schema with the same name"


def hide_schema_match_warning() -> None:
    """Hide Hydra's schema-matching deprecation note (:data:`SCHEMA_MATCH_WARNING`) in this process."""
    import warnings

    warnings.filterwarnings("ignore", message=SCHEMA_MATCH_WARNING, category=UserWarning)


def _exit_on_composition_error(exc: Exception) -> NoReturn:
    """One line for a Hydra / OmegaConf composition error (an unknown group option: Hydra's message, which lists
    the options), exit 2."""
    if isinstance(exc, MissingConfigException):
        print(str(exc), file=sys.stderr)
    else:
        print(f"error: {composition_error_line(exc, sys.argv[1:])}", file=sys.stderr)
    sys.exit(2)


def refuse_secret_overrides(argv: list[str]) -> None:
    """Exit 2 with one line, before Hydra composes or writes anything, when an override carries a secret (a key-like
    name such as ``api_key``, ``*_key``, ``token``, ``password``, ``secret`` with a value that is not a number, or
    an ``sk-…`` string): Hydra would write it to the run dir's ``.hydra/`` files and a sweep's ``multirun.yaml``.
    The value is not repeated."""
    keys = secret_overrides(argv)
    if keys:
        print(
            f"error: {', '.join(f'{k}=***' for k in keys)}: a secret is never passed on the command line (Hydra writes "
            "every override to the run dir); export it and name the variable, e.g. backbone.api_key_env=OPENAI_API_KEY."
            " Nothing was written",
            file=sys.stderr,
        )
        sys.exit(2)


def run_main() -> None:
    """``memcore-run [overrides…]``: one run, or a sweep with ``-m``. A Hydra composition error (an override of a
    key that does not exist, an unknown group option) exits 2 with one line, unless HYDRA_FULL_ERROR is set."""
    refuse_secret_overrides(sys.argv[1:])
    sys.argv[1:], renamed = rename_overrides(sys.argv[1:])
    for line in renamed:  # before Hydra sets up logging: one plain line on stderr per old key name
        print(line, file=sys.stderr)
    pin_library_threads()
    stop_on_sigterm()
    register_resolvers()
    hide_schema_match_warning()
    own_errors = not os.environ.get("HYDRA_FULL_ERROR")
    if own_errors:
        os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises instead of printing a trimmed trace and exiting 1
    try:
        _hydra_main()
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the runner already stopped its workers; no traceback
        reason = str(exc) or "Ctrl-C"
        print(f"interrupted ({reason}): finished items are kept; rerun the same command to resume", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        if own_errors and isinstance(exc, HydraException | OmegaConfBaseException):
            _exit_on_composition_error(exc)  # MissingConfigException is an OSError too: checked first
        if isinstance(exc, OSError) and own_errors and not _raised_in_run(exc):
            # Hydra could not create or write the run dir (under /proc, a file in the way, ...)
            print(f"error: {unwritable_line(exc, exc.filename or '?')}", file=sys.stderr)
            sys.exit(2)
        raise
    finally:
        if own_errors:
            os.environ.pop("HYDRA_FULL_ERROR", None)


if __name__ == "__main__":
    run_main()
