"""``python -m oneside``: what the wheel installed, and what it reaches here.

  python -m oneside --version   the version, the prefix, and each transport
                                with whether this host can use it (the
                                fabric libraries are the host's, opened at
                                run time; the wheel carries none)
  python -m oneside --prefix    the prefix alone, for scripts
"""

import os
import subprocess
import sys

from . import __version__, bin_dir, prefix


def _probe():
    """``rlaunch --probe``'s findings as a dict (what ``rlaunch --check``
    asks each host)."""
    rlaunch = os.path.join(bin_dir(), "rlaunch")
    done = subprocess.run([rlaunch, "--probe"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60)
    found = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        found[key] = value
    return found


def _reach(found):
    """One line per transport: shm and tcp always, verbs and ofi as far as
    their libraries open and find devices."""
    lines = ["shm: yes (processes on one host)", "tcp: yes"]
    devices = found.get("transports", "").split(",")
    verbs = next((d.split(":", 1)[1] for d in devices if d.startswith("verbs:")), "none")
    library = found.get("libibverbs", "not probed")
    if library != "ok":
        lines.append(f"verbs: no (libibverbs: {library})")
    elif verbs == "none":
        lines.append("verbs: no (libibverbs opens, but this host has no RDMA device)")
    else:
        lines.append(f"verbs: yes ({verbs})")
    fabric = found.get("libfabric", "not probed")
    if fabric[:1].isdigit():
        lines.append(f"ofi: yes (libfabric {fabric})")
    else:
        lines.append(f"ofi: no (libfabric: {fabric})")
    return lines


def main(argv):
    if argv[:1] == ["--prefix"]:
        print(prefix())
        return 0
    if argv[:1] not in (["--version"], []):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(f"oneside {__version__} in {prefix()}")
    try:
        found = _probe()
    except (OSError, subprocess.SubprocessError) as error:
        print(f"cannot run {os.path.join(bin_dir(), 'rlaunch')}: {error}", file=sys.stderr)
        return 1
    print("transports this host can reach:")
    for line in _reach(found):
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
