"""The one configuration error, in a module of its own so every layer can raise it without imports."""

from __future__ import annotations


class ConfigError(ValueError):
    """A bad key or value anywhere in the run config, a method's section or an ablation. The message is one line
    naming the key, the value and what is allowed; memcore-run prints it as ``error: …`` and exits 2."""
