"""Checking live gateway traffic against the rules the sandbox enforces (``sandbox proxy``).

Nothing here writes a rule: requests are read by :mod:`walletctl.sandbox.requests` (strict
JSON, amounts in the configured format, integer fields) and validated by the sandbox's own
request models; answers by the response models; each order's follow-ups by
:mod:`walletctl.models.ledger` (the CLI's and the sandbox's one rule set). This module only
turns their refusals into :class:`Violation` records and keeps, per order, what the earlier
answers said (:class:`OrderBook`).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from walletctl.errors import RefusedError, RequestValidationError
from walletctl.models.base import ResponseModel, WireModel
from walletctl.models.checkout import CheckoutResponse
from walletctl.models.fields import check_reference
from walletctl.models.followup import FollowUpResponse
from walletctl.models.ledger import APPROVED, Balance, Entry, Kind, check_followup, kind_of
from walletctl.models.money import AmountFormat
from walletctl.models.operations import KIND_OF_OP, OP_OF_KIND
from walletctl.models.records import TransactionRecord
from walletctl.models.walletpay import (
    AuthorizationResponse,
    GatewayErrorObject,
    PaymentAccount,
    PublicKeys,
)
from walletctl.sandbox import requests as reading
from walletctl.sandbox.replies import SandboxError

Direction = Literal["request", "answer"]
MAX_ORDERS: Final = 100_000  # orders remembered at once (the oldest is forgotten first)
_LOOKUP_PARAMS: Final = ("merchantId", "storeId", "clientSystemTransactionId")
# a checkout's state once it has left Pending (design: "States") never changes again
_FINAL_STATES: Final = frozenset({"Approved", "Declined", "Cancelled", "Expired", "Errored"})


MAX_PER_EXCHANGE: Final = 20  # violations reported per request or answer, then a count
MAX_TEXT: Final = 500  # characters of a field or rule (a field name is the sender's text)


def _plain(text: str) -> str:
    """One line of at most :data:`MAX_TEXT` characters: control characters escaped, so
    nobody's key can forge another stderr line."""
    shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text[:MAX_TEXT])
    return shown + ("...(truncated)" if len(text) > MAX_TEXT else "")


@dataclass(frozen=True)
class Violation:
    direction: Direction
    route: str  # "POST /api/v5/checkout"
    field: str
    rule: str

    def __post_init__(self) -> None:
        for name in ("route", "field", "rule"):
            object.__setattr__(self, name, _plain(getattr(self, name)))

    def line(self) -> str:
        return f"{self.direction} {self.route}: {self.field}: {self.rule}"

    def to_json(self) -> dict[str, str]:
        return {"direction": self.direction, "route": self.route, "field": self.field,
                "rule": self.rule}


@dataclass(frozen=True)
class Route:
    """A gateway route the proxy checks: its request model, its answer model (``many``: a
    JSON array of them) and the order it belongs to."""

    method: str
    pattern: re.Pattern[str]
    name: str
    request: type[WireModel] | None
    answer: type[ResponseModel] | None
    many: bool = False


def _route(method: str, path: str, request: type[WireModel] | None,
           answer: type[ResponseModel] | None, *, many: bool = False) -> Route:
    regex = re.compile("^" + re.sub(r"\{[a-z_]+\}", "[^/]+", path) + "$")
    return Route(method, regex, f"{method} {path}", request, answer, many)


ROUTES: Final = (
    _route("POST", "/api/v5/checkout", reading.CheckoutBody, CheckoutResponse),
    _route("POST", "/api/v5/apmTransactions", reading.FollowUpBody, FollowUpResponse),
    _route("GET", "/api/v5/apmTransactions", None, TransactionRecord, many=True),
    _route("POST", "/api/v5/publicKeys", reading.PublicKeysBody, PublicKeys),
    _route("POST", "/api/v5/paymentAccounts", reading.PaymentAccountBody, None),
    _route("GET", "/api/v5/paymentAccounts/{account_id}", None, PaymentAccount),
    _route("POST", "/api/v5/transactions", reading.AuthorizationBody, AuthorizationResponse),
    _route("POST", "/api/v5/threeDSecure", reading.ChallengeRequestBody, None),
    _route("GET", "/api/v5/threeDSecure/{challenge_id}", None, None),
)


def route_of(method: str, path: str) -> Route | None:
    """The checked gateway route of a request, None for any other (forwarded unchecked)."""
    for route in ROUTES:
        if route.method == method and route.pattern.match(path):
            return route
    return None


def _from_message(direction: Direction, route: str, message: str) -> Violation:
    """A sandbox refusal ``"field: rule"`` as a violation."""
    name, sep, rule = message.partition(": ")
    if not sep or " " in name.strip("()"):
        name, rule = "(body)", message
    return Violation(direction, route, name, rule)


def _problems(direction: Direction, route: str,
              exc: RequestValidationError) -> list[Violation]:
    return [Violation(direction, route, name or "(body)", rule) for name, rule in exc.problems]


# -- per-order memory: what the earlier answers said ------------------------------------------


@dataclass
class Order:
    original: Entry | None = None
    followups: list[Entry] = field(default_factory=list)

    def balance(self) -> Balance | None:
        if self.original is None or self.original.kind not in ("sale", "preauth"):
            return None
        if self.original.state == "Pending":
            return None  # decided on the hosted page, out of the proxy's sight: unknown
        return Balance.of(self.original, self.followups)


OrderKey = tuple[str, str, str]  # merchantId, storeId, the original's reference


class OrderBook:
    """Each order's original and follow-ups as the gateway answered them (bounded)."""

    def __init__(self, limit: int = MAX_ORDERS) -> None:
        self._orders: OrderedDict[OrderKey, Order] = OrderedDict()
        self._limit = limit

    def get(self, key: OrderKey) -> Order | None:
        return self._orders.get(key)

    def put(self, key: OrderKey) -> Order:
        order = self._orders.get(key)
        if order is None:
            order = self._orders[key] = Order()
            while len(self._orders) > self._limit:
                self._orders.popitem(last=False)
        self._orders.move_to_end(key)
        return order

    def __len__(self) -> int:
        return len(self._orders)


# -- one exchange ---------------------------------------------------------------------------


@dataclass
class Exchange:
    """What the request check learnt, for the answer check."""

    route: Route | None
    name: str
    data: dict[str, Any] | None = None
    model: Any = None  # the validated request, when it was valid
    refused: str | None = None  # the ledger's refusal of this follow-up, if any
    lookup: dict[str, str] | None = None


class Checker:
    """Checks requests and answers; ``report`` gets each violation as it is found."""

    def __init__(self, fmt: AmountFormat, report: Callable[[Violation], None]) -> None:
        self.fmt = fmt
        self.report = report
        self.orders = OrderBook()

    def _emit(self, found: list[Violation]) -> list[Violation]:
        if len(found) > MAX_PER_EXCHANGE:
            first = found[0]
            found = [*found[:MAX_PER_EXCHANGE], Violation(
                first.direction, first.route, "(more)",
                f"{len(found) - MAX_PER_EXCHANGE} more violations not shown")]
        for violation in found:
            self.report(violation)
        return found

    # -- requests ------------------------------------------------------------------------

    def request(self, method: str, path: str, query: bytes,
                body: bytes) -> tuple[Exchange, list[Violation]]:
        """Check a request and report what breaks a rule (:meth:`read_request`, then
        :meth:`judge_request`)."""
        ex, found = self.read_request(method, path, query, body)
        return ex, self.judge_request(ex, found)

    def read_request(self, method: str, path: str, query: bytes,
                     body: bytes) -> tuple[Exchange, list[Violation]]:
        """The request read and validated: no order touched, nothing reported (any thread
        may run it)."""
        route = route_of(method, path)
        ex = Exchange(route, route.name if route else f"{method} {path}")
        if route is None:
            return ex, []
        if route.request is not None:
            return ex, self._request_body(ex, route.request, body)
        if route.name == "GET /api/v5/apmTransactions":
            return ex, self._lookup_query(ex, query)
        return ex, []

    def judge_request(self, ex: Exchange, found: list[Violation]) -> list[Violation]:
        """The order's rules on a read request, then every violation reported."""
        if ex.model is not None and ex.name == "POST /api/v5/apmTransactions":
            found = found + self._followup_rules(ex)
        return self._emit(found)

    def _request_body(self, ex: Exchange, model: type[WireModel],
                      body: bytes) -> list[Violation]:
        try:
            ex.data = reading.read_body(body, self.fmt, where="(body)")
        except SandboxError as exc:
            return [_from_message("request", ex.name, exc.message)]
        try:
            ex.model = model.from_wire(ex.data, self.fmt)
        except RequestValidationError as exc:
            return _problems("request", ex.name, exc)
        except (ValueError, TypeError, RecursionError):
            return [Violation("request", ex.name, "(body)", "the body could not be read")]
        return []

    def _lookup_query(self, ex: Exchange, query: bytes) -> list[Violation]:
        try:
            values = reading.read_query(query, _LOOKUP_PARAMS, _LOOKUP_PARAMS)
            check_reference(values["clientSystemTransactionId"])
        except SandboxError as exc:
            return [_from_message("request", ex.name, part) for part in exc.message.split("; ")]
        except ValueError as exc:
            return [Violation("request", ex.name, "clientSystemTransactionId", str(exc))]
        ex.lookup = values
        return []

    def _followup_rules(self, ex: Exchange) -> list[Violation]:
        req = ex.model
        order = self.orders.get((req.merchant_id, req.store_id, req.client_system_invoice_id))
        balance = order.balance() if order is not None else None
        if balance is None:
            return []  # an order the proxy has not seen: nothing to check it against
        try:
            check_followup(balance, req.operation, req.amount, req.currency_code)
        except RefusedError as exc:
            ex.refused = exc.message
            return [Violation("request", ex.name, _ledger_field(exc.message), exc.message)]
        return []

    # -- answers -------------------------------------------------------------------------

    def answer(self, ex: Exchange, status: int, body: bytes,
               content_type: str) -> list[Violation]:
        """Check an answer and report what breaks a rule (:meth:`read_answer`, then
        :meth:`judge_answer`)."""
        found, parsed = self.read_answer(ex, status, body, content_type)
        return self.judge_answer(ex, found, parsed)

    def read_answer(self, ex: Exchange, status: int, body: bytes,
                    content_type: str) -> tuple[list[Violation], list[Any] | None]:
        """The answer read and validated -> (violations, the parsed objects to learn from,
        None when there is nothing to learn): no order touched, nothing reported."""
        route = ex.route
        if route is None or "json" not in content_type.lower() or not body.strip():
            return [], None
        try:
            data: Any = reading.parse_object(b'{"_":' + body + b"}", where="(body)")["_"]
        except SandboxError as exc:
            return [_from_message("answer", ex.name, exc.message)], None
        if status >= 400:
            return self._one("answer", ex.name, GatewayErrorObject, data)[0], None
        if route.answer is None or status >= 300:
            return [], None
        if route.many and not isinstance(data, list):
            return [Violation("answer", ex.name, "(body)", "must be a JSON array")], None
        items = data if route.many else [data]
        found: list[Violation] = []
        parsed: list[Any] = []
        for i, item in enumerate(items):
            where = f"[{i}]." if route.many else ""
            try:
                reading.check_numbers(item, self.fmt)
            except SandboxError as exc:
                found.append(_from_message("answer", ex.name, where + exc.message))
                continue
            problems, model = self._one("answer", ex.name, route.answer, item, prefix=where)
            found += problems
            if model is not None:
                parsed.append(model)
        return found, parsed

    def judge_answer(self, ex: Exchange, found: list[Violation],
                     parsed: list[Any] | None) -> list[Violation]:
        """What a valid answer says about its order (learnt, and checked against the order's
        earlier answers), then every violation reported."""
        if not found and parsed is not None:
            found = self._states(ex, parsed)
        return self._emit(found)

    def _one(self, direction: Direction, name: str, model: type[WireModel], data: Any,
             prefix: str = "") -> tuple[list[Violation], Any]:
        """``data`` validated by ``model`` -> (violations, the model or None)."""
        if not isinstance(data, dict):
            return [Violation(direction, name, prefix.rstrip(".") or "(body)",
                              "must be a JSON object")], None
        try:
            return [], model.from_wire(data, self.fmt)
        except RequestValidationError as exc:
            return [Violation(direction, name, prefix + (f or "(body)"), rule)
                    for f, rule in exc.problems], None
        except (ValueError, TypeError, RecursionError):
            return [Violation(direction, name, prefix.rstrip(".") or "(body)",
                              "could not be read")], None

    # -- the state machine -----------------------------------------------------------------

    def _states(self, ex: Exchange, parsed: list[Any]) -> list[Violation]:
        name, req = ex.name, ex.model
        if name == "POST /api/v5/checkout" and req is not None:
            order = self.orders.put((req.merchant_id, req.store_id,
                                     req.client_system_transaction_id))
            if order.original is None:
                kind: Kind = "preauth" if req.is_preauth else "sale"
                order.original = Entry(kind, "Pending", req.amount, req.currency_code,
                                       req.client_system_transaction_id)
        elif name == "POST /api/v5/transactions" and req is not None and parsed:
            answer: AuthorizationResponse = parsed[0]
            order = self.orders.put((req.merchant_id, req.store_id,
                                     req.client_system_transaction_id))
            kind = "preauth" if req.type == "ecom.preauthorization" else "sale"
            order.original = Entry(kind, answer.state, req.amount, req.currency_code,
                                   req.client_system_transaction_id)
        elif name == "POST /api/v5/apmTransactions" and req is not None and parsed:
            return self._followup_answer(ex, parsed[0])
        elif name == "GET /api/v5/apmTransactions" and ex.lookup is not None:
            return self._lookup_answer(ex, parsed)
        return []

    def _followup_answer(self, ex: Exchange, answer: FollowUpResponse) -> list[Violation]:
        req = ex.model
        found: list[Violation] = []
        if answer.state == APPROVED and ex.refused is not None:
            found.append(Violation("answer", ex.name, "state",
                                   f"Approved, but the order's earlier answers allow no such "
                                   f"{req.operation}: {ex.refused}"))
        order = self.orders.get((req.merchant_id, req.store_id, req.client_system_invoice_id))
        if order is not None:
            order.followups.append(Entry(KIND_OF_OP[req.operation], answer.state,
                                         req.amount, req.currency_code,
                                         req.client_system_transaction_id))
        return found

    def _lookup_answer(self, ex: Exchange, records: list[TransactionRecord]) -> list[Violation]:
        assert ex.lookup is not None
        merchant, store, ref = (ex.lookup[p] for p in _LOOKUP_PARAMS)
        found: list[Violation] = []
        original: Entry | None = None
        followups: list[Entry] = []
        for i, rec in enumerate(records):
            kind = kind_of(rec.type)
            if kind is None:
                continue
            entry = Entry(kind, rec.state, rec.transaction_amount, rec.currency_code.upper(),
                          rec.client_system_transaction_id)
            if rec.client_system_transaction_id == ref and kind in ("sale", "preauth"):
                original = entry
            elif rec.client_system_invoice_id in (None, ref):
                followups.append(entry)
            else:
                found.append(Violation("answer", ex.name, f"[{i}].clientSystemInvoiceId",
                                       f"{rec.client_system_invoice_id!r} is not the reference "
                                       f"looked up ({ref})"))
        known = self.orders.get((merchant, store, ref))
        if original is None:
            return found
        if known is not None and known.original is not None:
            before = known.original
            if before.state in _FINAL_STATES and original.state != before.state:
                found.append(Violation("answer", ex.name, "state",
                                       f"{original.state} after {before.state}: a checkout's "
                                       "state is final once it has left Pending"))
            if before.amount != original.amount:
                found.append(Violation("answer", ex.name, "transactionAmount",
                                       f"{original.amount} differs from the checkout's "
                                       f"{before.amount}"))
        # replay the follow-ups the gateway approved through the ledger's rules
        balance = Balance.of(original)
        for entry in followups:
            op = OP_OF_KIND.get(entry.kind)
            if op is None or entry.state != APPROVED:
                continue
            try:
                check_followup(balance, op, entry.amount, entry.currency)
            except RefusedError as exc:
                found.append(Violation("answer", ex.name, "state",
                                       f"an Approved {entry.kind} {entry.reference} is "
                                       f"impossible after the order's earlier records: "
                                       f"{exc.message}"))
                continue
            balance = balance.applied(op, entry.amount)
        order = self.orders.put((merchant, store, ref))
        order.original, order.followups = original, followups
        return found


def _ledger_field(message: str) -> str:
    """The request field a ledger refusal is about."""
    if message.startswith("currency "):
        return "currencyCode"
    if " exceeds " in message or message.startswith(("amount ", "a reversal releases")):
        return "amount"
    if "only a pre-authorisation" in message or "cannot be reversed" in message:
        return "type"
    return "clientSystemInvoiceId"

