"""A 409 (the reference is already used) means the same thing to a checkout, a follow-up and
a batch: one lookup of the reference, judged by the money protocol's one rule
(``earlier.verdict_of``), decides.

* another transaction holds it -> refused (exit 5), recorded ``declined`` with both named:
  nothing was applied, nothing is left unknown, and ``recon`` agrees;
* it is this very movement (applied, its answer lost or turned into a 409) -> reported as
  already there (exit 0), recorded from its state, nothing sent again;

driven from outside: real ``walletctl`` processes on profiles made with ``profile add``,
against ``sandbox serve`` through the tests' fault proxy; money read from the gateway.
"""

from __future__ import annotations

from .conftest import Desk, unique

DECLINED = 5
CHECKOUTS = "/api/v5/checkout"


def _entries(desk: Desk, ref: str) -> list[dict[str, object]]:
    return [e for e in desk.history() if ref in (e["original_ref"], e["new_ref"])]


def test_a_checkout_on_a_taken_reference_is_refused_and_recon_agrees(desk: Desk) -> None:
    ref = desk.sale(unique("TAKEN"), "50.00")  # straight to the gateway: not in the history
    result = desk.run("-p", "desk-a", "checkout", "--amount", "12.51", "--ref", ref,
                      expect=DECLINED)
    first = result.stderr.splitlines()[0]
    assert f"refused checkout {ref} of 12.51 EUR" in first, result
    assert f"sale {ref} of 50.00 EUR (Approved)" in first, result
    assert [(r["clientSystemTransactionId"], r["transactionAmount"])
            for r in desk.records(ref)] == [(ref, 5000)], "the gateway's sale is unchanged"
    [entry] = _entries(desk, ref)
    assert (entry["outcome"], entry["http_status"], entry["exit_code"]) == ("declined", 409, 5)
    desk.run("-p", "desk-a", "recon", "--ref", ref, expect=0)
    assert not [e for e in desk.history() if e["outcome"] == "unknown"]


def test_a_checkout_of_another_type_on_a_taken_reference_is_refused(desk: Desk) -> None:
    """The same reference, amount and currency, but a sale asked where the gateway holds a
    pre-authorisation (and the other way round): not this very checkout, so refused (exit
    5), never reported as already created."""
    for kind, held in (("sale", desk.preauth), ("preauth", desk.sale)):
        ref = held(unique("KIND"), "40.00")
        result = desk.run("-p", "desk-a", "checkout", "--amount", "40.00", "--ref", ref,
                          "--type", kind, expect=DECLINED)
        assert f"not a {kind}" in result.stderr, result
        [entry] = _entries(desk, ref)
        assert (entry["outcome"], entry["http_status"]) == ("declined", 409), entry
        # the order's timeline: the refused attempt is not the gateway's record, which
        # stands as its own step
        steps = desk.run("-p", "desk-a", "-o", "json", "order", ref).json()["timeline"]
        assert [(s["entry"] is not None, s["outcome"], s["gatewayState"]) for s in steps] \
            == [(False, None, "Approved"), (True, "declined", None)], steps


def test_a_checkout_whose_409_is_this_very_checkout_is_reported_created(desk: Desk) -> None:
    ref = unique("LOST")
    desk.proxy.status_after_forward(409, method="POST", path_prefix=CHECKOUTS)
    done = desk.run("-p", "desk-a", "-o", "json", "checkout", "--amount", "12.50", "--ref",
                    ref, expect=0).json()
    assert (done["alreadyCreated"], done["redirectUrl"]) == (True, None), done
    assert (done["amount"], done["currencyCode"], done["state"]) == ("12.50", "EUR", "Pending")
    assert len(desk.proxy.posts(CHECKOUTS)) == 1, "sent once"
    [entry] = _entries(desk, ref)
    assert (entry["outcome"], entry["http_status"]) == ("created", 409), entry
    desk.run("-p", "desk-a", "recon", "--ref", ref, expect=0)


def test_a_follow_up_on_a_reference_held_elsewhere_is_refused(desk: Desk) -> None:
    order = desk.preauth(unique("PRE"), "40.00")
    other = desk.sale(unique("OTHER"), "40.00")
    result = desk.run("-p", "desk-a", "capture", order, "--amount", "40", "--new-ref", other,
                      "--yes", expect=DECLINED)
    assert f"sale {other} of 40.00 EUR (Approved)" in result.stderr, result
    assert desk.followups(order, "capture") == [], "nothing applied on the order"
    [entry] = [e for e in _entries(desk, order) if e["operation"] == "capture"]
    assert (entry["outcome"], entry["http_status"]) == ("declined", 409), entry
    desk.run("-p", "desk-a", "recon", "--ref", order, expect=0)
    # the order is not blocked: the capture goes through under a reference of its own
    desk.run("-p", "desk-a", "capture", order, "--amount", "40", "--yes", expect=0)
    assert len(desk.followups(order, "capture")) == 1


def test_a_follow_up_whose_409_is_this_very_capture_is_reported_applied(desk: Desk) -> None:
    order = desk.preauth(unique("PRE"), "40.00")
    desk.proxy.status_after_forward(409)  # applied at the gateway, the client told 409
    done = desk.run("-p", "desk-a", "-o", "json", "capture", order, "--amount", "15",
                    "--yes", expect=0).json()
    assert (done["alreadyApplied"], done["state"]) == (True, "Approved"), done
    captures = desk.followups(order, "capture")
    assert [c["transactionAmount"] for c in captures] == [1500], "applied once"
    [entry] = [e for e in _entries(desk, order) if e["operation"] == "capture"]
    assert (entry["outcome"], entry["http_status"]) == ("approved", 409), entry
    desk.run("-p", "desk-a", "recon", "--ref", order, expect=0)


def test_an_unknown_checkout_reconciled_reads_as_one(desk: Desk) -> None:
    """A checkout's answer lost: recorded unknown (exit 8), then ``history --unknown
    --reconcile`` settles it; its line names the reference once (a checkout has no new
    reference to point at) and recon agrees afterwards."""
    ref = unique("DROP")
    desk.proxy.drop_after_forward(method="POST", path_prefix=CHECKOUTS)
    desk.run("-p", "desk-a", "checkout", "--amount", "9.99", "--ref", ref, expect=8)
    desk.run("-p", "desk-a", "recon", "--ref", ref, expect=13)
    lines = desk.run("-p", "desk-a", "-o", "table", "history", "--unknown", "--reconcile",
                     env={"COLUMNS": "80"}, expect=0).stdout
    [line] = [ln for ln in lines.splitlines() if ref in ln]
    assert f"checkout {ref}: created" in line, lines
    assert "None" not in lines, lines
    desk.run("-p", "desk-a", "recon", "--ref", ref, expect=0)
