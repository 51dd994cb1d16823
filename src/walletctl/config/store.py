"""The profiles file's names the tests import from here (the modules below hold the code).

walletctl's own code imports each name from the module that holds it:

* :mod:`walletctl.config.location` - where the file is (--config > $WALLETCTL_CONFIG > default);
* :mod:`walletctl.config.validate` - strict validation of a document, with error locations;
* :mod:`walletctl.config.private` - the permission rule (0600 like ssh) and atomic 0600 writes;
* :mod:`walletctl.config.profiles_file` - loading the file, picking a profile, saving it whole;
* :mod:`walletctl.config.edit` - ``profile add/remove``: in-place edits that keep comments.
"""

from __future__ import annotations

from walletctl.config.edit import add_profile, remove_profile
from walletctl.config.location import config_path, default_config_path
from walletctl.config.private import write_private
from walletctl.config.profile import ProfilesFile
from walletctl.config.profiles_file import load_file, load_profile, save_file, select_profile
from walletctl.config.validate import valid_profile_name

__all__ = [
    "ProfilesFile",
    "add_profile",
    "config_path",
    "default_config_path",
    "load_file",
    "load_profile",
    "remove_profile",
    "save_file",
    "select_profile",
    "valid_profile_name",
    "write_private",
]
