# The `oneside` wheel (`make wheel`, dist/wheel.sh; pyproject.toml names
# the backend). It lays out in the environment pip installs into the same
# prefix as `make install` (dist/install.sh):
#   bin/                 rlaunch, oshrun, oshcc, oshc++ (wheel scripts)
#   lib/                 liboneside_shmem.so.<soname>, liboneside_shmem.so
#                        (a linker script naming it: a wheel holds no
#                        symbolic links), liboneside_shmem.a, pkgconfig/
#   include/             shmem.h, pshmem.h, shmemx.h, mpp/
#   share/man/man1/      rlaunch.1, oshrun.1, oshcc.1
#   site-packages/oneside/  the Python module (prefix(), __version__)
# so oshcc, found at <env>/bin, finds <env>/include and <env>/lib as it
# does in an installed prefix. The three tools are setuptools-rust RustBins,
# built by one `cargo build` of rlaunch and oneside-shmem together (one
# feature resolution, so oneside is compiled once); the C library of that
# same build is added as data. No fabric library (libibverbs, libfabric,
# libpmix) is inside: oneside opens them at run time, from the host.
import glob
import json
import os
import re
import shutil
import subprocess

from setuptools import setup
from setuptools_rust import RustBin
from setuptools_rust.build import build_rust

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel

ROOT = os.path.dirname(os.path.abspath(__file__))
# Every binary comes from one cargo build of both packages.
PACKAGES = ["-p", "rlaunch", "-p", "oneside-shmem"]
MAN_PAGES = ["rlaunch", "oshrun", "oshcc"]
LIB = "liboneside_shmem"


def workspace_version():
    """The workspace's version ([workspace.package] in Cargo.toml)."""
    with open(os.path.join(ROOT, "Cargo.toml")) as cargo:
        text = cargo.read()
    section = text.split("[workspace.package]", 1)[1]
    return re.search(r'^version = "([^"]+)"', section, re.M).group(1)


class build_oneside(build_rust):
    """setuptools-rust's build of the tools, then the C library's files."""

    def run(self):
        super().run()
        artifacts = self.library_artifacts()
        stage = os.path.join(os.path.abspath(self.build_temp or "build"), "oneside-prefix")
        shutil.rmtree(stage, ignore_errors=True)
        files = {}

        def put(source, subdir, name=None):
            dest = os.path.join(stage, subdir, name or os.path.basename(source))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(source, dest)
            files.setdefault(subdir, []).append(dest)
            return dest

        shared = next(a for a in artifacts if a.endswith(".so"))
        static = next(a for a in artifacts if a.endswith(".a"))
        libdir = os.path.dirname(shared)
        # capi/build.rs links the soname (liboneside_shmem.so.0.<minor>)
        # to the library, next to it.
        sonames = [os.path.basename(p) for p in glob.glob(os.path.join(libdir, LIB + ".so.*"))]
        if len(sonames) != 1:
            raise RuntimeError(f"expected one soname link next to {shared}, found {sonames}")
        soname = sonames[0]
        put(shared, "lib", soname)
        # ld reads a text file as a linker script: `-loneside_shmem` then
        # links the soname, as the symbolic link of an installed prefix does.
        script = os.path.join(stage, "lib", LIB + ".so")
        with open(script, "w") as out:
            out.write(f"/* GNU ld script: {LIB}.so is {soname} (a wheel cannot hold a link) */\nINPUT({soname})\n")
        files["lib"].append(script)
        archive = put(static, "lib")
        # Cargo strips linked files only; strip the archive alike, when asked.
        if os.environ.get("CARGO_PROFILE_RELEASE_STRIP") and shutil.which("strip"):
            subprocess.run(["strip", "--strip-debug", archive], check=True)
        for header in sorted(glob.glob(os.path.join(ROOT, "capi/include/**/*.h"), recursive=True)):
            rel = os.path.relpath(os.path.dirname(header), os.path.join(ROOT, "capi/include"))
            put(header, os.path.normpath(os.path.join("include", rel)))
        with open(os.path.join(ROOT, "dist/oneside-shmem.pc.in")) as template:
            pc = template.read().replace("@VERSION@", workspace_version())
        pc_path = os.path.join(stage, "lib/pkgconfig/oneside-shmem.pc")
        os.makedirs(os.path.dirname(pc_path), exist_ok=True)
        with open(pc_path, "w") as out:
            out.write(pc)
        files["lib/pkgconfig"] = [pc_path]
        scripts = self.get_finalized_command("install_scripts").build_dir
        # ONESIDE_MAN_FROM: an rlaunch that runs here, when this one is
        # cross-built (dist/wheel.sh with WHEEL_ARCH).
        rlaunch = os.environ.get("ONESIDE_MAN_FROM") or os.path.join(scripts, "rlaunch")
        man = os.path.join(stage, "share/man/man1")
        os.makedirs(man, exist_ok=True)
        for page in MAN_PAGES:
            path = os.path.join(man, page + ".1")
            with open(path, "wb") as out:
                subprocess.run([rlaunch, "--print-man", page], stdout=out, check=True)
            files.setdefault("share/man/man1", []).append(path)
        # oshc++ is oshcc under another name (it compiles C++ when so
        # called); a copy, since a wheel cannot hold a link.
        shutil.copy2(os.path.join(scripts, "oshcc"), os.path.join(scripts, "oshc++"))
        self.distribution.data_files = sorted(files.items())

    def library_artifacts(self):
        """liboneside_shmem's .so and .a from the build super() ran (cargo
        answers at once: nothing is left to build)."""
        command = [self.cargo, "build", "--manifest-path", os.path.join(ROOT, "capi/Cargo.toml"),
                   "--message-format=json", *PACKAGES]
        if not self._is_debug_build(self.distribution.rust_extensions[0]):
            command.append("--release")
        target = self.target if isinstance(self.target, str) else os.environ.get("CARGO_BUILD_TARGET")
        if target:
            command += ["--target", target]
        found = []
        output = subprocess.run(command, stdout=subprocess.PIPE, check=True, text=True).stdout
        for line in output.splitlines():
            message = json.loads(line)
            if message.get("reason") == "compiler-artifact" and message["target"]["name"] == "oneside_shmem":
                found += [f for f in message["filenames"] if f.endswith((".so", ".a"))]
        if not found:
            raise RuntimeError("cargo built no liboneside_shmem")
        return found


class bdist_oneside(bdist_wheel):
    """The wheel holds no Python extension: any Python 3 on the platform
    runs its programs, so its tag is py3-none-<platform>."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


# setuptools' own files stay under target/, as cargo's do.
BUILD_BASE = os.path.join("target", "wheel-build")
os.makedirs(BUILD_BASE, exist_ok=True)

setup(
    version=workspace_version(),
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
    package_dir={"": "python"},
    packages=["oneside"],
    rust_extensions=[
        RustBin("rlaunch", path="launcher/Cargo.toml", args=PACKAGES),
        RustBin("oshrun", path="launcher/Cargo.toml", args=PACKAGES),
        RustBin("oshcc", path="capi/Cargo.toml", args=PACKAGES),
    ],
    cmdclass={"build_rust": build_oneside, "bdist_wheel": bdist_oneside},
    zip_safe=False,
)
