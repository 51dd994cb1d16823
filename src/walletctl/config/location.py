"""Where the profiles file is (discovery).

First that applies::

    --config PATH  >  $WALLETCTL_CONFIG  >  <platform config dir>/walletctl/profiles.toml
                                            (e.g. ~/.config/walletctl/profiles.toml)
"""

from __future__ import annotations

import os
from pathlib import Path

from walletctl.constants import Env

__all__ = ["config_path", "default_config_path"]


def default_config_path() -> Path:
    """``<user config dir>/walletctl/profiles.toml`` (platformdirs; honours XDG_CONFIG_HOME)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("walletctl", appauthor=False)) / "profiles.toml"


def config_path(explicit: Path | None = None) -> Path:
    """The profiles file to use: ``explicit`` (--config) > $WALLETCTL_CONFIG > the default."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get(Env.CONFIG)
    if env:
        return Path(env).expanduser()
    return default_config_path()
