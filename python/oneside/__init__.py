"""oneside, installed by pip: where its launcher, compiler wrappers, C
library and headers are.

The wheel lays out a prefix in the environment pip installs into (a venv's
root, ``~/.local`` for ``--user``): ``bin/rlaunch``, ``bin/oshrun``,
``bin/oshcc``, ``lib/liboneside_shmem.so``, ``include/shmem.h``. This
module finds that prefix from the files pip recorded, so it is right
wherever pip put them. Python programs use OpenSHMEM through shmem4py,
built against this prefix's ``oshcc``; ``python -m oneside --version``
says which transports this host can reach.
"""

import os
import sys

__all__ = ["__version__", "prefix", "bin_dir", "lib_dir", "include_dir"]

try:
    from importlib import metadata as _metadata
except ImportError:  # Python < 3.8
    _metadata = None


def _version():
    try:
        return _metadata.version("oneside")
    except Exception:
        return "unknown"


__version__ = _version()


def prefix():
    """The prefix the wheel installed: the directory holding ``bin/rlaunch``,
    ``lib/`` and ``include/``."""
    try:
        for record in _metadata.files("oneside") or []:
            parts = str(record).replace("\\", "/").split("/")
            if parts[-2:] == ["include", "shmem.h"]:
                return os.path.dirname(os.path.dirname(os.path.abspath(record.locate())))
    except Exception:
        pass
    # No record (a copy of the module outside an installation): the prefix
    # of the running environment, where pip puts a wheel's data.
    return sys.prefix


def bin_dir():
    """``<prefix>/bin``: rlaunch, oshrun, oshcc, oshc++."""
    return os.path.join(prefix(), "bin")


def lib_dir():
    """``<prefix>/lib``: liboneside_shmem and its pkg-config file."""
    return os.path.join(prefix(), "lib")


def include_dir():
    """``<prefix>/include``: shmem.h, pshmem.h, shmemx.h."""
    return os.path.join(prefix(), "include")
