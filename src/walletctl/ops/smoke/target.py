"""What a smoke run talks to: a profile's gateway (real sandbox or walletctl's embedded one).

:class:`Target` bundles the gateway client (whose transport records every exchange), the
client of the walletctl sandbox's admin routes (:class:`~walletctl.client.admin.SandboxAdmin`,
over the same recording transport), and the redirect approver:

1. ``--approve-url-command CMD`` when given: ``CMD <redirectUrl>`` is run (also with
   ``WALLETCTL_SMOKE_REDIRECT_URL`` / ``WALLETCTL_SMOKE_REFERENCE`` in its environment);
   exit status 0 means the customer approved.
2. otherwise the walletctl sandbox's headless approval ``POST /_sandbox/checkouts/{ref}/approve``;
3. a gateway without that route (404 and no ``/_sandbox/ledger``) needs a person or a browser:
   the approval step is *skipped with a reason*, and so is the rest of its scenario.
"""

from __future__ import annotations

import os
import secrets as _secrets
import shlex
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from walletctl.client.admin import SandboxAdmin, SandboxRefused, SandboxUnreachable
from walletctl.config.profile import AuthSettings, Profile
from walletctl.errors import ConfigError, ResponseError, UsageError
from walletctl.masking import Masker
from walletctl.ops.smoke import StepFailed, StepSkipped
from walletctl.ops.smoke.transport import ExchangeLog, RecordingTransport

if TYPE_CHECKING:
    from walletctl.client.gateway import GatewayClient
    from walletctl.models.records import TransactionRecord
    from walletctl.ops.smoke import SmokeOptions

ENV_REDIRECT_URL = "WALLETCTL_SMOKE_REDIRECT_URL"
ENV_REFERENCE = "WALLETCTL_SMOKE_REFERENCE"
PENDING = "Pending"
EMBEDDED_MERCHANT = ("SMOKE-MERCHANT", "SMOKE-STORE", "smoke-bot")


@dataclass
class Target:
    profile: Profile
    client: GatewayClient
    admin: SandboxAdmin  # admin routes of a walletctl sandbox (same recording transport)
    masker: Masker
    currency: str
    options: SmokeOptions  # the approver and the timeouts
    _is_sandbox: bool | None = field(default=None, repr=False)

    # -- approval -------------------------------------------------------------------------
    def approve(self, reference: str, redirect_url: str) -> str:
        """Approve the customer's side of a checkout; returns a one-line detail."""
        if self.options.approve_command:
            return self._approve_with_command(reference, redirect_url)
        if self.profile.is_production:  # never a sandbox's admin route on a production gateway
            raise StepSkipped(
                "a production profile: a person approves the checkout (no headless approval); "
                "pass --approve-url-command CMD to supply an approver")
        ids = {"merchantId": self.profile.merchant_id, "storeId": self.profile.store_id}
        try:
            data = self.admin.decide(reference, "approve", ids)
        except SandboxRefused as exc:
            if exc.status == 404 and not self.is_walletctl_sandbox():
                raise StepSkipped(
                    "this gateway has no headless approval (not a walletctl sandbox): a person "
                    "or a browser must approve; pass --approve-url-command CMD to supply an "
                    "approver") from None
            raise StepFailed(f"headless approval of {reference} answered HTTP {exc.status}: "
                             f"{_error_text(exc)}") from None
        except SandboxUnreachable as exc:
            raise StepFailed(f"{exc.request}: no answer ({exc.cause})") from None
        except ResponseError as exc:
            raise StepFailed(f"headless approval of {reference}: {exc.message}") from None
        state = data.get("state")
        return "approved headlessly by the sandbox" + (f" (state {state})" if state else "")

    def is_walletctl_sandbox(self) -> bool:
        if self._is_sandbox is None and self.profile.is_production:
            self._is_sandbox = False  # not even probed: no /_sandbox/ request to production
        if self._is_sandbox is None:
            self._is_sandbox = self.admin.answers_health()
        return self._is_sandbox

    def _approve_with_command(self, reference: str, redirect_url: str) -> str:
        assert self.options.approve_command is not None
        argv = [*shlex.split(self.options.approve_command), redirect_url]
        env = {**os.environ, ENV_REDIRECT_URL: redirect_url, ENV_REFERENCE: reference}
        try:
            done = subprocess.run(argv, env=env, capture_output=True, text=True,
                                  timeout=self.options.approve_timeout, check=False)
        except FileNotFoundError:
            raise UsageError(f"--approve-url-command: {argv[0]!r} was not found") from None
        except subprocess.TimeoutExpired:
            raise StepFailed(f"the approver command did not finish within "
                             f"{self.options.approve_timeout:g} s") from None
        if done.returncode != 0:
            tail = (done.stderr or done.stdout or "").strip().splitlines()[-3:]
            said = (": " + " | ".join(tail)) if tail else ""
            raise StepFailed(f"the approver command exited with status {done.returncode}{said}")
        return "approved by --approve-url-command"

    # -- lookups --------------------------------------------------------------------------
    def settled_records(self, reference: str) -> list[TransactionRecord]:
        """Look ``reference`` up, polling while its original is still ``Pending``."""
        deadline = time.monotonic() + self.options.settle_timeout
        delay = 0.2
        while True:
            records = self.client.lookup(reference)
            original = original_record(records, reference)
            if original is None or original.state != PENDING or time.monotonic() >= deadline:
                return records
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def close(self) -> None:
        self.client.close()
        self.admin.close()


def original_record(records: list[TransactionRecord],
                    reference: str) -> TransactionRecord | None:
    return next((r for r in records if r.client_system_transaction_id == reference), None)


def _error_text(refused: SandboxRefused) -> str:
    """The sandbox's ``details.message`` or description, else what it answered."""
    body: Any = refused.body
    if isinstance(body, str):  # not JSON: the start of its text
        return body[:200] or "(empty body)"
    if isinstance(body, dict):
        return str(refused.detail or refused.description or body)[:200]
    return str(body)[:200]


def known_secrets(profile: Profile) -> list[str]:
    """The profile's secrets (resolved now: a missing one is a ConfigError before any step)."""
    from walletctl.client.answer_guard import credential_parts
    from walletctl.config.secrets import auth_header, service_basic_auth

    found: list[str] = []
    header = auth_header(profile)
    if header is not None:
        found.append(header[1])
        found.append(header[1].split(" ", 1)[-1])
    try:
        service = service_basic_auth(profile)
    except ConfigError:
        service = None  # only the browser-wallet scenario needs it; it reports it then
    if service is not None:  # the header, its token and the password in it
        found.extend(credential_parts(service[1]))
    if profile.auth.key:
        found.append(profile.auth.key)
    return found


@contextmanager
def open_target(profile: Profile, masker: Masker, log: ExchangeLog, options: SmokeOptions, *,
                transport: httpx.BaseTransport | None = None,
                trace: Callable[[str], None] | None = None, embedded: bool = False,
                history_run: str | None = None) -> Iterator[Target]:
    """A :class:`Target` for ``profile`` (the run's ``options``: its currency and approver)
    whose HTTP exchanges go to ``log`` (masked)."""
    from walletctl.client.gateway import GatewayClient, profile_timeout
    from walletctl.models.money import check_currency

    for secret in known_secrets(profile):
        masker.add(secret)
    try:
        cur = check_currency(options.currency or profile.currency or "EUR")
    except ValueError as exc:
        raise UsageError(f"--currency: {exc}") from None
    inner = transport or environment_transport(profile.base_url)
    if history_run is not None and not embedded:  # real money: recorded in the history
        from walletctl.ops.smoke.transport import HistoryTransport

        inner = HistoryTransport(inner, profile, history_run)
    recording = RecordingTransport(inner, log)
    client = GatewayClient(profile, transport=recording, trace=trace)
    admin = SandboxAdmin(profile.base_url, transport=recording, timeout=profile_timeout(profile))
    target = Target(profile=profile, client=client, admin=admin, masker=masker, currency=cur,
                    options=options, _is_sandbox=True if embedded else None)
    try:
        yield target
    finally:
        target.close()


def embedded_profile(url: str, api_key: str, amount_format: str = "minor") -> Profile:
    """The profile of a private embedded sandbox (inline, per-run random key; the checkout
    step gives the redirect URLs)."""
    merchant, store, user = EMBEDDED_MERCHANT
    return Profile(
        name="embedded", base_url=url, merchant_id=merchant, store_id=store, user_id=user,
        amount_format="decimal" if amount_format == "decimal" else "minor", currency="EUR",
        timeout=15.0, auth=AuthSettings(scheme="PublicApiKey", key=api_key))


@contextmanager
def embedded_sandbox(*, amount_format: str = "minor") -> Iterator[Profile]:
    """Start a private sandbox on a free loopback port for the duration; yield its profile."""
    from walletctl.ops.sandbox_admin import embedded

    secret = "smoke-" + _secrets.token_urlsafe(18)
    with embedded(api_key=secret, service_secret=secret, amount_format=amount_format) as url:
        yield embedded_profile(url, secret, amount_format)


def environment_transport(base_url: str) -> httpx.HTTPTransport:
    """A transport that honours HTTP(S)_PROXY / ALL_PROXY / NO_PROXY like httpx's own default.

    httpx only reads the proxy variables for the transport it builds itself; smoke supplies
    its own (recording) transport, so it resolves the proxy here. Loopback is never proxied.
    """
    import ipaddress
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    host = parts.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback or urllib.request.proxy_bypass(host):
        return httpx.HTTPTransport()
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    return httpx.HTTPTransport(proxy=proxy) if proxy else httpx.HTTPTransport()
