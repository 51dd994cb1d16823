"""Profiles: discovery, strict loading (every rule, with its location), selection, the ssh-style
permission rule, atomic 0600 saving, secret resolution and auth headers."""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from walletctl.config import profiles_file, secrets
from walletctl.config.profile import (
    AuthSettings,
    Profile,
    ProfilesFile,
    display_path,
    valid_profile_name,
)
from walletctl.constants import ExitCode
from walletctl.errors import ConfigError, UsageError

REPO = Path(__file__).resolve().parents[2]
SECRET = "tEsT-SeCrEt-7f3a9c"  # must never show up in any message

posix_only = pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")

BASE = """\
[profiles.p]
base_url = "https://gw.example"
merchant_id = "M-1"
store_id = "S-1"
user_id = "ops"
"""


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private HOME / XDG config dir and no WALLETCTL_* variables."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for name in list(os.environ):
        if name.startswith("WALLETCTL_") or name.startswith("PROD_WALLET"):
            monkeypatch.delenv(name)
    return home


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    path.chmod(mode)
    return path


def load_text(tmp_path: Path, text: str, mode: int = 0o600) -> ProfilesFile:
    return profiles_file.load_file(write(tmp_path / "profiles.toml", text, mode))


def config_error(tmp_path: Path, text: str, mode: int = 0o600) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_text(tmp_path, text, mode)
    return info.value


def make_profile(tmp_path: Path, **auth: Any) -> Profile:
    return Profile(
        name="sandbox",
        base_url="http://127.0.0.1:8765",
        merchant_id="M-1",
        store_id="S-1",
        user_id="ops-bot",
        auth=AuthSettings(**auth),
        source=tmp_path / "profiles.toml",
    )


# --------------------------------------------------------------------------- discovery


def test_default_config_path_is_in_the_user_config_dir(isolated: Path) -> None:
    expected = isolated / ".config" / "walletctl" / "profiles.toml"
    assert profiles_file.default_config_path() == expected


def test_config_path_order_explicit_then_env_then_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert profiles_file.config_path(None) == profiles_file.default_config_path()
    monkeypatch.setenv("WALLETCTL_CONFIG", str(tmp_path / "env.toml"))
    assert profiles_file.config_path(None) == tmp_path / "env.toml"
    assert profiles_file.config_path(tmp_path / "flag.toml") == tmp_path / "flag.toml"


def test_config_path_expands_home(isolated: Path) -> None:
    assert profiles_file.config_path(Path("~/p.toml")) == isolated / "p.toml"


# --------------------------------------------------------------------------- loading: valid


def test_full_profile_loads_with_every_key(tmp_path: Path) -> None:
    pf = load_text(
        tmp_path,
        """\
        default_profile = "p"

        [profiles.p]
        base_url = "https://gw.example/prefix"
        merchant_id = "M-1"
        store_id = "S-1"
        user_id = "ops"
        amount_format = "decimal"
        currency = "jpy"
        timeout = 2.5
        timezone = "Europe/Paris"

        [profiles.p.auth]
        scheme = "bearer"
        key_env = "MY_KEY"
        key_file = "keys/p.key"
        keyring = true
        username = "svc"
        service_secret_env = "SVC_SECRET"
        service_secret_file = "~/svc.secret"

        [profiles.p.paths]
        checkout = "/v9/checkout"

        [profiles.p.redirects]
        success_url = "https://shop.example/ok"
        error_url = "https://shop.example/error"
        """,
    )
    p = pf.profiles["p"]
    assert pf.default_profile == "p"
    assert (p.amount_format, p.currency, p.timeout, p.timezone) == (
        "decimal",
        "JPY",
        2.5,
        "Europe/Paris",
    )
    assert p.auth.scheme == "Bearer"  # scheme names are matched case-insensitively
    assert p.auth.key_file == tmp_path / "keys" / "p.key"  # relative to the profiles file
    assert p.auth.service_secret_file == Path.home() / "svc.secret"
    assert p.url("checkout") == "https://gw.example/prefix/v9/checkout"
    assert p.url("apm_transactions") == "https://gw.example/prefix/api/v5/apmTransactions"
    assert p.redirects == {
        "success_url": "https://shop.example/ok",
        "error_url": "https://shop.example/error",
    }
    assert p.source == tmp_path / "profiles.toml"


def test_defaults_of_a_minimal_profile(tmp_path: Path) -> None:
    p = load_text(tmp_path, BASE).profiles["p"]
    assert (p.amount_format, p.currency, p.timeout, p.auth.scheme) == (
        "minor",
        None,
        30.0,
        "PublicApiKey",
    )
    assert p.paths == {}
    assert p.redirects == {}


# --------------------------------------------------------------------------- loading: rules

RULES: list[tuple[str, str, str]] = [
    # (toml appended to / replacing BASE, expected location, expected message fragment)
    ("defaults = 1\n" + BASE, "defaults", "unknown key"),
    (BASE + 'bse_url = "x"\n', "profiles.p -> bse_url", "unknown key"),
    (BASE + '[profiles.p.auth]\nkee_env = "K"\n', "profiles.p -> auth -> kee_env", "unknown key"),
    (
        BASE + '[profiles.p.paths]\ncheckot = "/x"\n',
        "profiles.p -> paths -> checkot",
        "unknown key",
    ),
    (
        BASE + '[profiles.p.redirects]\nok_url = "https://a.b"\n',
        "profiles.p -> redirects -> ok_url",
        "unknown key",
    ),
    (BASE.replace('merchant_id = "M-1"\n', ""), "profiles.p -> merchant_id", "missing (required)"),
    (
        BASE.replace("https://gw.example", "ftp://gw.example"),
        "profiles.p -> base_url",
        "must be an http(s) URL",
    ),
    (
        BASE.replace('"https://gw.example"', "42"),
        "profiles.p -> base_url",
        "must be a string, not an integer",
    ),
    (
        BASE.replace("https://gw.example", "https://"),
        "profiles.p -> base_url",
        "must be an http(s) URL",
    ),
    (BASE.replace('"M-1"', '""'), "profiles.p -> merchant_id", "must not be empty"),
    (BASE.replace('"S-1"', "[1]"), "profiles.p -> store_id", "must be a string, not an array"),
    (
        BASE + 'amount_format = "cents"\n',
        "profiles.p -> amount_format",
        "must be 'minor' or 'decimal', not 'cents'",
    ),
    (BASE + 'currency = "EUX"\n', "profiles.p -> currency", "not an ISO 4217 currency code"),
    (BASE + 'currency = "EURO"\n', "profiles.p -> currency", "ISO 4217"),
    (BASE + "timeout = 0\n", "profiles.p -> timeout", "must be greater than 0"),
    (BASE + "timeout = -1.5\n", "profiles.p -> timeout", "must be greater than 0"),
    (BASE + "timeout = nan\n", "profiles.p -> timeout", "must be greater than 0"),
    (BASE + 'timeout = "30"\n', "profiles.p -> timeout", "must be a number of seconds"),
    (BASE + "timeout = true\n", "profiles.p -> timeout", "must be a number of seconds"),
    (BASE + 'timezone = "Mars/Olympus"\n', "profiles.p -> timezone", "unknown time zone"),
    (
        BASE + '[profiles.p.paths]\ncheckout = "api/v5/checkout"\n',
        "profiles.p -> paths -> checkout",
        "must be a URL path starting with '/'",
    ),
    (
        BASE + '[profiles.p.redirects]\nerror_url = "not a url"\n',
        "profiles.p -> redirects -> error_url",
        "must be an http(s) URL",
    ),
    (
        BASE + '[profiles.p.auth]\nscheme = "Digest"\n',
        "profiles.p -> auth -> scheme",
        "must be one of PublicApiKey, Bearer, Basic, header, none",
    ),
    (
        BASE + '[profiles.p.auth]\nkey_env = "1BAD-NAME"\n',
        "profiles.p -> auth -> key_env",
        "must be an environment variable name",
    ),
    (
        BASE + '[profiles.p.auth]\nkeyring = "yes"\n',
        "profiles.p -> auth -> keyring",
        "must be true or false, not a string",
    ),
    (BASE + '[profiles.p.auth]\nkey = ""\n', "profiles.p -> auth -> key", "must not be empty"),
    (
        BASE + "[profiles.p.auth]\nkey = 12\n",
        "profiles.p -> auth -> key",
        "must be a string, not an integer",
    ),
    (
        BASE + '[profiles.p.auth]\nscheme = "header"\n',
        "profiles.p -> auth -> header",
        'missing (required when scheme = "header")',
    ),
    (
        BASE + '[profiles.p.auth]\nheader = "X-Key"\n',
        "profiles.p -> auth -> header",
        'is only used with scheme = "header"',
    ),
    (
        BASE + '[profiles.p.auth]\nscheme = "header"\nheader = "X Key"\n',
        "profiles.p -> auth -> header",
        "must be an HTTP header name",
    ),
    (
        BASE + '[profiles.p.auth]\nusername = "a:b"\n',
        "profiles.p -> auth -> username",
        "must not contain ':'",
    ),
    (BASE + "auth = 3\n", "profiles.p -> auth", "must be a table, not an integer"),
    ("profiles = 1\n", "profiles", "must be a table"),
    ("[profiles]\np = 1\n", "profiles.p", "must be a table"),
    (BASE.replace("[profiles.p]", '[profiles."a b"]'), "profiles.a b", "bad profile name"),
    ('default_profile = "x"\n' + BASE, "default_profile", "no profile named 'x'"),
    ("default_profile = 7\n" + BASE, "default_profile", "must be a string"),
]


@pytest.mark.parametrize(("text", "location", "fragment"), RULES)
def test_every_rule_names_its_location(
    tmp_path: Path, text: str, location: str, fragment: str
) -> None:
    err = config_error(tmp_path, text)
    assert err.location == location, err.message
    assert err.message.startswith(f"{location}: "), err.message
    assert fragment in err.message, err.message
    assert err.exit_code == ExitCode.CONFIG
    assert err.hint is not None
    assert "profiles.toml" in err.hint


def test_unknown_key_suggests_the_close_one(tmp_path: Path) -> None:
    err = config_error(
        tmp_path, BASE + '[profiles.prod.auth]\nkee_env = "K"\n'.replace("prod", "p")
    )
    assert err.message == "profiles.p -> auth -> kee_env: unknown key"
    assert err.hint is not None
    assert "did you mean 'key_env'?" in err.hint


def test_unknown_key_without_close_match_lists_allowed(tmp_path: Path) -> None:
    err = config_error(tmp_path, BASE + "[profiles.p.auth]\nzzz = 1\n")
    assert err.hint is not None
    assert "allowed keys: scheme, key_env" in err.hint


@pytest.mark.parametrize(
    "text",
    [
        BASE + f'[profiles.p.auth]\nkye = "{SECRET}"\n',  # a typo of key
        BASE + f'[profiles.p.auth]\nkey_env = "{SECRET}"\n',  # a secret pasted in the wrong key
        BASE.replace("https://gw.example", f"https://ops:{SECRET}@gw.example"),
    ],
)
def test_load_errors_never_echo_a_secret(tmp_path: Path, text: str) -> None:
    err = config_error(tmp_path, text)
    assert SECRET not in err.message
    assert SECRET not in (err.hint or "")


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    err = config_error(tmp_path, BASE + "timeout = = 3\n")
    assert "is not valid TOML" in err.message
    assert "line 6" in err.message


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "profiles.toml"
    path.write_bytes(b"\xff\xfe[profiles]")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        profiles_file.load_file(path)


def test_missing_file_hints_at_profile_add(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        profiles_file.load_file(tmp_path / "nope.toml")
    assert "no profiles file at" in info.value.message
    assert info.value.hint is not None
    assert "walletctl profile add" in info.value.hint


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        profiles_file.load_file(tmp_path)


def test_empty_file_has_no_profiles(tmp_path: Path) -> None:
    pf = load_text(tmp_path, "")
    assert pf.profiles == {}
    with pytest.raises(ConfigError, match="no profiles in"):
        profiles_file.select_profile(pf, None)


# --------------------------------------------------------------------------- selection

TWO = BASE + BASE.replace("profiles.p]", "profiles.q]")


def test_selection_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pf = load_text(tmp_path, 'default_profile = "p"\n' + TWO)
    assert profiles_file.select_profile(pf, None).name == "p"  # default_profile
    monkeypatch.setenv("WALLETCTL_PROFILE", "q")
    assert profiles_file.select_profile(pf, None).name == "q"  # env beats default
    assert profiles_file.select_profile(pf, "p").name == "p"  # explicit name beats env


def test_only_profile_is_selected(tmp_path: Path) -> None:
    assert profiles_file.select_profile(load_text(tmp_path, BASE), None).name == "p"


def test_several_profiles_and_no_default(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        profiles_file.select_profile(load_text(tmp_path, TWO), None)
    assert "no profile selected" in info.value.message
    assert "(p, q)" in info.value.message
    assert info.value.hint is not None
    assert "--profile" in info.value.hint


def test_unknown_profile_lists_available(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        profiles_file.select_profile(load_text(tmp_path, TWO), "prod")
    assert "unknown profile 'prod'" in info.value.message
    assert "available: p, q" in info.value.message


def test_load_profile_uses_env_config_and_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "elsewhere.toml", TWO)
    monkeypatch.setenv("WALLETCTL_CONFIG", str(path))
    monkeypatch.setenv("WALLETCTL_PROFILE", "q")
    assert profiles_file.load_profile(None, None).name == "q"
    assert profiles_file.load_profile("p", None).name == "p"


def test_load_profile_explicit_path_beats_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WALLETCTL_CONFIG", str(tmp_path / "missing.toml"))
    path = write(tmp_path / "flag.toml", BASE)
    assert profiles_file.load_profile(None, path).source == path


def test_load_profile_default_location(isolated: Path) -> None:
    write(isolated / ".config" / "walletctl" / "profiles.toml", BASE)
    assert profiles_file.load_profile().name == "p"


# --------------------------------------------------------------------------- permissions

INLINE = BASE + f'[profiles.p.auth]\nkey = "{SECRET}"\n'


@posix_only
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620])
def test_inline_secret_in_open_file_is_refused(tmp_path: Path, mode: int) -> None:
    err = config_error(tmp_path, INLINE, mode)
    path = tmp_path / "profiles.toml"
    assert err.message == (f"permissions {mode:04o} for '{path}' are too open; it holds a secret")
    assert err.hint == f"chmod 600 {path}"
    assert SECRET not in err.message


@posix_only
@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_inline_secret_in_private_file_is_accepted(tmp_path: Path, mode: int) -> None:
    pf = load_text(tmp_path, INLINE, mode)
    assert pf.profiles["p"].auth.key == SECRET
    assert pf.mode == mode


@posix_only
def test_open_file_without_secret_is_fine(tmp_path: Path) -> None:
    assert load_text(tmp_path, BASE + '[profiles.p.auth]\nkey_env = "K"\n', 0o644).mode == 0o644


@posix_only
def test_permission_check_can_be_deferred(tmp_path: Path) -> None:
    path = write(tmp_path / "profiles.toml", INLINE, 0o644)
    pf = profiles_file.load_file(path, check_permissions=False)
    assert pf.holds_inline_secret


@posix_only
def test_open_key_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = write(tmp_path / "p.key", SECRET + "\n", 0o644)
    # even with a later source available: a too-open file never falls through
    prof = make_profile(tmp_path, key_file=key, key="inline")
    with pytest.raises(ConfigError) as info:
        secrets.resolve_secret(prof)
    assert info.value.message == (
        f"profiles.sandbox -> auth -> key_file: permissions 0644 for '{key}' are too open; "
        "it holds a secret"
    )
    assert info.value.hint == f"chmod 600 {key}"
    key.chmod(0o600)
    assert secrets.resolve_secret(prof).get_secret_value() == SECRET


# --------------------------------------------------------------------------- saving


@posix_only
def test_save_creates_0600_file_in_0700_dir(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "profiles.toml"
    doc = tomllib.loads(INLINE)
    saved = profiles_file.save_file(path, doc)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert saved.profiles["p"].auth.key == SECRET
    again = profiles_file.load_file(path)  # readable back (0600 + inline key is fine)
    assert again.document == doc
    assert [p.name for p in path.parent.iterdir()] == ["profiles.toml"]  # no temp left


@posix_only
def test_save_replaces_an_open_file_with_a_private_one(tmp_path: Path) -> None:
    path = write(tmp_path / "profiles.toml", BASE, 0o644)
    profiles_file.save_file(path, tomllib.loads(INLINE))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_save_refuses_an_invalid_document_and_keeps_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "profiles.toml", BASE)
    before = path.read_bytes()
    with pytest.raises(ConfigError, match=r"profiles\.p -> amount_format"):
        profiles_file.save_file(path, tomllib.loads(BASE + 'amount_format = "cents"\n'))
    assert path.read_bytes() == before


def test_save_is_atomic_when_the_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "profiles.toml", BASE)
    before = path.read_bytes()

    def broken_replace(src: Any, dst: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        profiles_file.save_file(path, tomllib.loads(TWO))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "profiles.toml"]


def test_add_profile_first_becomes_default(tmp_path: Path) -> None:
    path = tmp_path / "profiles.toml"
    table = tomllib.loads(BASE)["profiles"]["p"]
    res = profiles_file.add_profile(path, "a", dict(table))
    assert res.file.default_profile == "a"
    assert res.backup is None
    res = profiles_file.add_profile(path, "b", dict(table))
    assert res.file.default_profile == "a"
    res = profiles_file.add_profile(path, "c", dict(table), make_default=True)
    assert res.file.default_profile == "c"
    assert list(profiles_file.load_file(path).profiles) == ["a", "b", "c"]


def test_add_profile_refuses_duplicates_unless_replace(tmp_path: Path) -> None:
    path = tmp_path / "profiles.toml"
    table = tomllib.loads(BASE)["profiles"]["p"]
    profiles_file.add_profile(path, "a", dict(table))
    with pytest.raises(UsageError, match="already exists"):
        profiles_file.add_profile(path, "a", dict(table))
    profiles_file.add_profile(path, "a", {**table, "store_id": "S-9"}, replace=True)
    assert profiles_file.load_file(path).profiles["a"].store_id == "S-9"


def test_add_profile_refuses_bad_names(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="bad profile name"):
        profiles_file.add_profile(tmp_path / "p.toml", "../evil", {})
    assert not (tmp_path / "p.toml").exists()


def test_editing_a_commented_file_keeps_every_comment(tmp_path: Path) -> None:
    text = "# my notes\n" + BASE.replace('"M-1"', '"M-1"  # the merchant id from onboarding')
    path = write(tmp_path / "profiles.toml", text)
    table = tomllib.loads(BASE)["profiles"]["p"]
    res = profiles_file.add_profile(path, "b", dict(table))
    assert res.backup is None
    after = path.read_text()
    assert after.startswith(text)  # the original text untouched, the new table appended
    profiles_file.remove_profile(path, "b")
    assert path.read_text().rstrip() == text.rstrip()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "profiles.toml"]  # no .lock


def test_remove_profile_moves_the_default(tmp_path: Path) -> None:
    path = write(tmp_path / "profiles.toml", 'default_profile = "p"\n' + TWO)
    res = profiles_file.remove_profile(path, "p")
    assert list(res.file.profiles) == ["q"]
    assert res.file.default_profile == "q"
    with pytest.raises(ConfigError, match="unknown profile 'p'"):
        profiles_file.remove_profile(path, "p")


def test_config_import_stays_light() -> None:
    code = (
        "import sys, walletctl.config.profiles_file, walletctl.config.profile;"
        "bad = [m for m in ('pydantic', 'rich', 'httpx', 'tomli_w', 'keyring')"
        " if m in sys.modules]; print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"heavy modules imported by config.profiles_file: {out}"


# --------------------------------------------------------------------------- sample configs


def test_every_sample_config_loads() -> None:
    files = sorted((REPO / "sample-configs").glob("*.toml"))
    assert len(files) >= 4, files
    seen: set[str] = set()
    for path in files:
        pf = profiles_file.load_file(path)
        assert pf.profiles, f"{path.name} has no profile"
        profiles_file.select_profile(pf, None)  # each file selects a profile without flags
        for p in pf.profiles.values():
            if p.auth.key_env:
                seen.add("key_env")
            if p.auth.key_file:
                seen.add("key_file")
            if p.auth.keyring:
                seen.add("keyring")
            if p.base_url.startswith("http://127.0.0.1"):
                seen.add("sandbox")
    assert seen == {"key_env", "key_file", "keyring", "sandbox"}


# --------------------------------------------------------------------------- secrets: order


@pytest.fixture
def fake_keyring(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, str], str]:
    """An in-memory keyring module behind the secret store's lazy import."""
    entries: dict[tuple[str, str], str] = {}
    module = SimpleNamespace(
        get_password=lambda service, user: entries.get((service, user)),
        set_password=lambda service, user, value: entries.__setitem__((service, user), value),
    )
    monkeypatch.setattr(secrets, "_keyring", lambda: module)
    return entries


@pytest.fixture
def all_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_keyring: dict[tuple[str, str], str]
) -> Profile:
    monkeypatch.setenv("WALLETCTL_SANDBOX_KEY", "from-env")
    write(tmp_path / "p.key", "from-file\n")
    fake_keyring[("walletctl", "sandbox")] = "from-keyring"
    write(tmp_path / "profiles.toml", "")  # the inline key's file, 0600
    return make_profile(
        tmp_path,
        key_env="WALLETCTL_SANDBOX_KEY",
        key_file=tmp_path / "p.key",
        keyring=True,
        key="from-inline",
    )


def test_resolution_order(
    all_sources: Profile,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_keyring: dict[tuple[str, str], str],
) -> None:
    got = secrets.resolve_secret_with_source
    assert got(all_sources)[0].get_secret_value() == "from-env"
    assert got(all_sources)[1] == "env WALLETCTL_SANDBOX_KEY"
    monkeypatch.delenv("WALLETCTL_SANDBOX_KEY")
    assert got(all_sources)[0].get_secret_value() == "from-file"
    (tmp_path / "p.key").unlink()
    assert got(all_sources)[0].get_secret_value() == "from-keyring"
    fake_keyring.clear()
    assert got(all_sources)[0].get_secret_value() == "from-inline"


def test_saved_secret_is_the_last_resort(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prof = make_profile(tmp_path, key_env="WALLETCTL_SANDBOX_KEY")
    where = secrets.save_secret(prof, "key", SECRET)
    assert where == f"file {display_path(tmp_path / 'sandbox.key')} (0600)"
    assert secrets.resolve_secret_with_source(prof)[1].startswith("saved file")
    monkeypatch.setenv("WALLETCTL_SANDBOX_KEY", "from-env")
    assert secrets.resolve_secret(prof).get_secret_value() == "from-env"


def test_secret_is_a_secretstr(all_sources: Profile) -> None:
    value = secrets.resolve_secret(all_sources)
    assert "from-env" not in repr(value)
    assert "from-env" not in str(value)


def test_missing_env_message(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        secrets.resolve_secret(make_profile(tmp_path, key_env="WALLETCTL_SANDBOX_KEY"))
    assert info.value.message == (
        "profiles.sandbox -> auth -> key_env: environment variable WALLETCTL_SANDBOX_KEY is not set"
    )
    assert info.value.exit_code == ExitCode.CONFIG


def test_empty_env_is_not_a_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WALLETCTL_SANDBOX_KEY", "  ")
    with pytest.raises(ConfigError, match="WALLETCTL_SANDBOX_KEY is empty"):
        secrets.resolve_secret(make_profile(tmp_path, key_env="WALLETCTL_SANDBOX_KEY"))


def test_every_missing_source_is_named(
    tmp_path: Path, fake_keyring: dict[tuple[str, str], str]
) -> None:
    prof = make_profile(
        tmp_path, key_env="WALLETCTL_SANDBOX_KEY", key_file=tmp_path / "none.key", keyring=True
    )
    with pytest.raises(ConfigError) as info:
        secrets.resolve_secret(prof)
    msg = info.value.message
    assert msg.startswith("profiles.sandbox -> auth: no secret found (")
    assert "key_env: environment variable WALLETCTL_SANDBOX_KEY is not set" in msg
    assert f"key_file: file {tmp_path / 'none.key'} does not exist" in msg
    assert "keyring: no keyring entry walletctl/sandbox" in msg


def test_nothing_configured(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"profiles\.sandbox -> auth: no secret configured"):
        secrets.resolve_secret(make_profile(tmp_path))


def test_key_file_is_stripped_and_must_not_be_empty(tmp_path: Path) -> None:
    key = write(tmp_path / "p.key", f"  {SECRET}\r\n")
    assert secrets.resolve_secret(make_profile(tmp_path, key_file=key)).get_secret_value() == (
        SECRET
    )
    write(key, "\n")
    with pytest.raises(ConfigError, match="is empty"):
        secrets.resolve_secret(make_profile(tmp_path, key_file=key))


def test_control_characters_refused_without_showing_the_secret(tmp_path: Path) -> None:
    key = write(tmp_path / "p.key", f"{SECRET}\nsecond-line{SECRET}\n")
    with pytest.raises(ConfigError) as info:
        secrets.resolve_secret(make_profile(tmp_path, key_file=key))
    assert "control characters" in info.value.message
    assert SECRET not in info.value.message


@posix_only
def test_inline_secret_rechecks_its_file(tmp_path: Path) -> None:
    write(tmp_path / "profiles.toml", "", 0o644)
    with pytest.raises(ConfigError, match="are too open"):
        secrets.resolve_secret(make_profile(tmp_path, key=SECRET))


# --------------------------------------------------------------------------- keyring


def test_keyring_not_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)  # makes `import keyring` fail
    with pytest.raises(ConfigError) as info:
        secrets.resolve_secret(make_profile(tmp_path, keyring=True))
    assert info.value.message == (
        "profiles.sandbox -> auth -> keyring: keyring support is not installed"
    )
    assert info.value.hint is not None
    assert "pip install keyring" in info.value.hint


def test_keyring_without_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("keyring")
    import keyring.backends.fail
    import keyring.core

    monkeypatch.setattr(keyring.core, "_keyring_backend", keyring.backends.fail.Keyring())  # type: ignore[no-untyped-call]
    with pytest.raises(ConfigError, match="no keyring backend is available"):
        secrets.resolve_secret(make_profile(tmp_path, keyring=True))
    with pytest.raises(ConfigError, match="no keyring backend is available"):
        secrets.save_secret(make_profile(tmp_path, keyring=True), "key", SECRET)


def test_keyring_failure_falls_through_to_inline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)
    write(tmp_path / "profiles.toml", "")
    prof = make_profile(tmp_path, keyring=True, key=SECRET)
    assert secrets.resolve_secret(prof).get_secret_value() == SECRET


def test_save_secret_to_keyring(tmp_path: Path, fake_keyring: dict[tuple[str, str], str]) -> None:
    prof = make_profile(tmp_path, keyring=True)
    assert secrets.save_secret(prof, "key", SECRET) == "keyring walletctl/sandbox"
    assert secrets.save_secret(prof, "encryption_key", "enc") == (
        "keyring walletctl/sandbox.encryption_key"
    )
    assert fake_keyring == {
        ("walletctl", "sandbox"): SECRET,
        ("walletctl", "sandbox.encryption_key"): "enc",
    }
    assert secrets.resolve_secret(prof).get_secret_value() == SECRET
    stored = secrets.keyring_get(prof, "encryption_key")
    assert stored is not None
    assert stored == "enc"
    assert not list(tmp_path.glob("*.key"))  # nothing written to disk


@posix_only
def test_save_secret_to_file(tmp_path: Path) -> None:
    prof = make_profile(tmp_path, key_env="UNSET_VAR")
    where = secrets.save_secret(prof, "encryption_key", SECRET)
    path = tmp_path / "sandbox.encryption_key.key"
    assert where == f"file {display_path(path)} (0600)"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    stored = path.read_text()
    assert stored is not None
    assert stored == SECRET + "\n"
    assert not secrets.saved_secret_path(prof, "other").exists()
    secrets.save_secret(prof, "encryption_key", "replaced")  # replaces
    assert path.read_text() == "replaced\n"


def test_save_secret_rejects_bad_names_and_values(tmp_path: Path) -> None:
    prof = make_profile(tmp_path)
    with pytest.raises(ValueError, match="bad secret name"):
        secrets.save_secret(prof, "../x", SECRET)
    with pytest.raises(ValueError, match="control characters"):
        secrets.save_secret(prof, "key", "a\nb")


# --------------------------------------------------------------------------- auth headers


@pytest.mark.parametrize(
    ("auth", "expected"),
    [
        ({"scheme": "PublicApiKey"}, ("Authorization", f"PublicApiKey {SECRET}")),
        ({"scheme": "Bearer"}, ("Authorization", f"Bearer {SECRET}")),
        (
            {"scheme": "Basic"},
            ("Authorization", "Basic " + base64.b64encode(f"ops-bot:{SECRET}".encode()).decode()),
        ),
        (
            {"scheme": "Basic", "username": "svc"},
            ("Authorization", "Basic " + base64.b64encode(f"svc:{SECRET}".encode()).decode()),
        ),
        ({"scheme": "header", "header": "X-Api-Key"}, ("X-Api-Key", SECRET)),
        ({"scheme": "none"}, None),
    ],
)
def test_auth_header_per_scheme(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    auth: dict[str, Any],
    expected: tuple[str, str] | None,
) -> None:
    monkeypatch.setenv("WALLETCTL_SANDBOX_KEY", SECRET)
    prof = make_profile(tmp_path, key_env="WALLETCTL_SANDBOX_KEY", **auth)
    assert secrets.auth_header(prof) == expected


def test_scheme_none_needs_no_secret(tmp_path: Path) -> None:
    assert secrets.auth_header(make_profile(tmp_path, scheme="none")) is None
    assert secrets.service_basic_auth(make_profile(tmp_path, scheme="none")) is None


def test_basic_user_with_colon_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K", SECRET)
    prof = Profile(
        name="p",
        base_url="http://h",
        merchant_id="m",
        store_id="s",
        user_id="a:b",
        auth=AuthSettings(scheme="Basic", key_env="K"),
    )
    with pytest.raises(ConfigError, match="must not contain ':'"):
        secrets.auth_header(prof)


def test_auth_errors_propagate(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="WALLETCTL_SANDBOX_KEY is not set"):
        secrets.auth_header(make_profile(tmp_path, key_env="WALLETCTL_SANDBOX_KEY"))


def _basic(user: str, secret: str) -> tuple[str, str]:
    return ("Authorization", "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode())


def test_service_basic_auth_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAIN", "main-secret")
    # falls back to the main secret
    assert secrets.service_basic_auth(make_profile(tmp_path, key_env="MAIN")) == _basic(
        "ops-bot", "main-secret"
    )
    # service_secret_env first, then service_secret_file
    svc_file = write(tmp_path / "svc.secret", "file-secret\n")
    prof = make_profile(
        tmp_path, key_env="MAIN", service_secret_env="SVC", service_secret_file=svc_file
    )
    assert secrets.service_basic_auth(prof) == _basic("ops-bot", "file-secret")
    monkeypatch.setenv("SVC", "env-secret")
    assert secrets.service_basic_auth(prof) == _basic("ops-bot", "env-secret")


def test_service_secret_configured_but_missing(tmp_path: Path) -> None:
    prof = make_profile(tmp_path, key="x", service_secret_env="SVC")
    with pytest.raises(ConfigError) as info:
        secrets.service_basic_auth(prof)
    assert info.value.message == (
        "profiles.sandbox -> auth -> service_secret_env: environment variable SVC is not set"
    )


# --------------------------------------------------------------------------- description


def test_describe_secret_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    d = secrets.describe_secret_source
    assert d(make_profile(tmp_path, key_env="WALLETCTL_SANDBOX_KEY")) == (
        "env WALLETCTL_SANDBOX_KEY (not set)"
    )
    monkeypatch.setenv("WALLETCTL_SANDBOX_KEY", SECRET)
    assert d(make_profile(tmp_path, key_env="WALLETCTL_SANDBOX_KEY")) == (
        "env WALLETCTL_SANDBOX_KEY (set)"
    )
    key = write(isolated / ".config" / "walletctl" / "prod.key", SECRET)
    assert d(make_profile(tmp_path, key_file=key)) == "file ~/.config/walletctl/prod.key (0600)"
    if os.name != "nt":
        key.chmod(0o644)
        assert d(make_profile(tmp_path, key_file=key)) == (
            "file ~/.config/walletctl/prod.key (0644, too open)"
        )
    assert d(make_profile(tmp_path, key_file=tmp_path / "x.key")).endswith("(missing)")
    assert d(make_profile(tmp_path, keyring=True)) == "keyring walletctl/sandbox"
    write(tmp_path / "profiles.toml", "")
    assert d(make_profile(tmp_path, key=SECRET)) == "inline (file is 0600)"
    assert d(make_profile(tmp_path, scheme="none")) == "none (scheme none)"
    assert d(make_profile(tmp_path)) == "not configured"
    both = d(make_profile(tmp_path, key_env="WALLETCTL_SANDBOX_KEY", keyring=True))
    assert both == "env WALLETCTL_SANDBOX_KEY (set), then keyring walletctl/sandbox"
    assert SECRET not in both


@posix_only
def test_save_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    target = write(tmp_path / "dotfiles" / "profiles.toml", BASE)
    link = tmp_path / "profiles.toml"
    link.symlink_to(target)
    table = tomllib.loads(BASE)["profiles"]["p"]
    profiles_file.add_profile(link, "b", dict(table))
    assert link.is_symlink()
    assert list(profiles_file.load_file(target).profiles) == ["p", "b"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_concurrent_adds_lose_nothing(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "profiles.toml"
    table = tomllib.loads(BASE)["profiles"]["p"]
    names = [f"p{i}" for i in range(12)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(lambda n: profiles_file.add_profile(path, n, dict(table)), names))
    assert sorted(profiles_file.load_file(path).profiles) == sorted(names)


def test_remove_from_a_missing_file_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no profiles file"):
        profiles_file.remove_profile(tmp_path / "cfg" / "profiles.toml", "p")
    assert not (tmp_path / "cfg").exists()


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("prod", True),
        ("eu-prod_2", True),
        ("9", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("", False),
        ("-prod", False),
        ("_prod", False),
        ("pröd", False),
        ("a.b", False),
        ("a/b", False),
    ],
)
def test_profile_names(name: str, ok: bool) -> None:
    assert valid_profile_name(name) is ok


@pytest.mark.parametrize(
    ("key_env", "ok"),
    [("WALLETCTL_KEY", True), ("_k1", True), ("1K", False), ("K-1", False), ("KÉY", False)],
)
def test_env_var_names(tmp_path: Path, key_env: str, ok: bool) -> None:
    text = BASE + f'[profiles.p.auth]\nkey_env = "{key_env}"\n'
    if ok:
        assert load_text(tmp_path, text).profiles["p"].auth.key_env == key_env
    else:
        assert config_error(tmp_path, text).location == "profiles.p -> auth -> key_env"
