"""The sdist and the wheel carry the top-level completions/, sample-configs/ and man/, and an
installed wheel uses them.

The sdist is built from this checkout, the wheel from the unpacked sdist (as pip does: so the
sdist alone is enough), with hatchling (the build backend; in walletctl[dev], else fetched with
pip into a scratch folder). The wheel is installed with pip into a fresh venv whose only other
path is this interpreter's site-packages (for the dependencies, so nothing is downloaded), and
its own ``walletctl`` runs there without PYTHONPATH: ``completion zsh``, ``profile example``,
``--version``; every shipped sample config loads; ``man`` renders and finds the shipped page.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from walletctl import __version__

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = {  # repository folder -> where the wheel puts it
    "completions": "walletctl/completions",
    "sample-configs": "walletctl/sample-configs",
    "man": "walletctl/man",
}
MAN_DATA = f"walletctl-{__version__}.data/data/share/man/man1/walletctl.1"


def repository_files() -> dict[str, bytes]:
    return {f"{folder}/{path.name}": path.read_bytes()
            for folder in SHIPPED for path in sorted((ROOT / folder).iterdir())}


@dataclass
class Built:
    sdist: Path
    wheel: Path
    venv: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PATH"] = f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
        env["HOME"] = str(self.venv.parent)  # no profiles file of the user's
        return subprocess.run(list(args), capture_output=True, text=True, env=env,
                              cwd=self.venv.parent, timeout=120, check=False)


def hatchling_env(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if importlib.util.find_spec("hatchling") is None:  # not installed: fetch it (pip's index)
        target = scratch / "hatchling"
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "--target", str(target), "hatchling>=1.24"], check=True, timeout=300)
        env["PYTHONPATH"] = str(target)
    return env


def build(source: Path, target: str, out: Path, env: dict[str, str]) -> Path:
    proc = subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", target, "-d",
                           str(out)], cwd=source, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, f"hatchling build -t {target}:\n{proc.stdout}{proc.stderr}"
    suffix = ".tar.gz" if target == "sdist" else ".whl"
    (artifact,) = out.glob(f"*{suffix}")
    return artifact


@pytest.fixture(scope="module")
def built() -> Iterator[Built]:
    scratch = Path(tempfile.mkdtemp(prefix="wctl-pkg-"))
    env = hatchling_env(scratch)
    sdist = build(ROOT, "sdist", scratch / "sdist", env)
    with tarfile.open(sdist) as archive:
        archive.extractall(scratch / "unpacked", filter="data")
    (unpacked,) = (scratch / "unpacked").iterdir()
    wheel = build(unpacked, "wheel", scratch / "wheel", env)

    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    site = Path(subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
         "['purelib'])"], capture_output=True, text=True, check=True, timeout=60).stdout.strip())
    # The dependencies from this interpreter's site-packages, after the venv's own (a plain
    # path: that folder's .pth files, an editable walletctl's among them, are not read).
    deps = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "_walletctl_test_deps.pth").write_text("\n".join(deps) + "\n")
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                           "install", "-q", "--disable-pip-version-check", "--no-deps",
                           "--no-index", str(wheel)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, f"pip install {wheel.name}:\n{proc.stdout}{proc.stderr}"
    yield Built(sdist=sdist, wheel=wheel, venv=venv)
    shutil.rmtree(scratch, ignore_errors=True)


def test_the_sdist_carries_the_repository_files(built: Built) -> None:
    with tarfile.open(built.sdist) as archive:
        prefix = archive.getnames()[0].split("/")[0]
        for name, content in repository_files().items():
            member = archive.extractfile(f"{prefix}/{name}")
            assert member is not None, f"{name} missing from {built.sdist.name}"
            assert member.read() == content, f"{name} in the sdist differs from the repository's"


def test_the_wheel_carries_them_in_the_package_and_the_man_page_in_its_data(
    built: Built,
) -> None:
    with zipfile.ZipFile(built.wheel) as archive:
        names = set(archive.namelist())
        for name, content in repository_files().items():
            folder, filename = name.split("/", 1)
            inside = f"{SHIPPED[folder]}/{filename}"
            assert inside in names, f"{inside} missing from {built.wheel.name}"
            assert archive.read(inside) == content, f"{inside} differs from {name}"
        assert archive.read(MAN_DATA) == (ROOT / "man" / "walletctl.1").read_bytes()
        # the PostgreSQL history's migrations are SQL files beside the package's modules
        for migration in sorted((ROOT / "src/walletctl/history/migrations").glob("V*.sql")):
            inside = f"walletctl/history/migrations/{migration.name}"
            assert archive.read(inside) == migration.read_bytes(), f"{inside} differs"
        stale = [n for n in names if n.startswith("walletctl/config/examples/")]
        assert not stale, f"an old in-package copy is in the wheel: {stale}"


def test_the_installed_walletctl_prints_the_shipped_files(built: Built) -> None:
    walletctl = str(built.venv / "bin" / "walletctl")
    where = built.run(str(built.venv / "bin" / "python"), "-c",
                      "import walletctl; print(walletctl.__file__)")
    assert where.stdout.startswith(str(built.venv)), f"not the wheel's walletctl: {where}"
    zsh = built.run(walletctl, "completion", "zsh")
    assert zsh.returncode == 0, zsh.stderr
    assert zsh.stdout == (ROOT / "completions" / "_walletctl").read_text(encoding="utf-8")
    for sample in sorted((ROOT / "sample-configs").glob("*.toml")):
        example = built.run(walletctl, "profile", "example", sample.stem)
        assert example.returncode == 0, example.stderr
        assert example.stdout == sample.read_text(encoding="utf-8"), sample.name
    version = built.run(walletctl, "--version")
    assert version.stdout.startswith(f"walletctl {__version__}\nPython "), version


def test_every_shipped_sample_config_loads(built: Built) -> None:
    code = (
        "from walletctl import shipped\n"
        "from walletctl.config import profiles_file\n"
        "folder = shipped.folder('sample-configs')\n"
        "assert str(folder).startswith(PREFIX), folder\n"
        "for path in sorted(folder.glob('*.toml')):\n"
        "    pf = profiles_file.load_file(path)\n"
        "    profiles_file.select_profile(pf, None)\n"
        "    print(path.name, len(pf.profiles))\n"
    ).replace("PREFIX", repr(str(built.venv)))
    proc = built.run(str(built.venv / "bin" / "python"), "-c", code)
    assert proc.returncode == 0, proc.stderr
    loaded = [line.split()[0] for line in proc.stdout.splitlines()]
    assert loaded == sorted(p.name for p in (ROOT / "sample-configs").glob("*.toml"))


def test_man_renders_the_installed_page_and_finds_it_beside_the_venv(built: Built) -> None:
    if shutil.which("man") is None:
        pytest.skip("LOUD SKIP: `man` (man-db) is not installed: .ci/run installs it")
    page = built.venv / "share" / "man" / "man1" / "walletctl.1"
    assert page.read_bytes() == (ROOT / "man" / "walletctl.1").read_bytes()
    rendered = built.run("man", "--warnings", "-l", str(page))
    assert rendered.returncode == 0, rendered.stderr
    assert rendered.stderr == "", rendered.stderr
    assert "walletctl" in rendered.stdout
    assert "EXIT STATUS" in rendered.stdout
    found = built.run("man", "-w", "walletctl")  # man's path follows PATH's venv/bin
    assert found.stdout.strip() == str(page), (found.stdout, found.stderr)
