"""Recon's findings in a local history file: recorded once, listed, resolved once with a
note (not by whoever made the movement), then shown as resolved and no longer reported."""

from __future__ import annotations

from pathlib import Path

from money.conftest import Desk, desk, unique  # noqa: F401 - the fixture
from reconcile.helpers import post_followup, write_entry
from walletctl.history import open_location

MISMATCH, REFUSED = 13, 5


def test_record_list_resolve_and_not_reported_again(desk: Desk) -> None:  # noqa: F811
    sale = desk.sale(unique("LF"), "50.00")
    post_followup(desk, sale, f"{sale}-DASH1", "2.50")
    history = Path(desk.env["WALLETCTL_AUDIT_LOG"])
    with open_location(history, create=True, purpose="test") as store:
        write_entry(store, desk, sale, f"{sale}-REF1", "10.00", "approved")  # by "tester"

    recon = ("-p", "desk-a", "-o", "json", "recon", "--ref", sale)
    desk.run(*recon, expect=MISMATCH)  # without --record nothing is filed
    assert desk.run("-p", "desk-a", "-o", "json", "recon", "findings",
                    expect=0).json()["findings"] == []
    doc = desk.run(*recon, "--record", expect=MISMATCH).json()
    ids = {f["reference"]: f["finding"]["id"] for f in doc["unrecorded"] + doc["unconfirmed"]}
    assert sorted(ids) == [f"{sale}-DASH1", f"{sale}-REF1"], doc
    table = desk.run("-p", "desk-a", "-o", "table", "recon", "--ref", sale,
                     expect=MISMATCH, env={"COLUMNS": "80"})
    assert "recon resolve ID" in table.stdout, table

    # --note is required, checked before anything is written; an unknown id is refused
    desk.run("-p", "desk-a", "recon", "resolve", str(ids[f"{sale}-REF1"]), expect=2)
    desk.run("-p", "desk-a", "recon", "resolve", "99999999999999999999", "--note", "x",
             expect=(2, REFUSED))
    desk.run("-p", "desk-a", "recon", "resolve", "424242", "--note", "x", expect=REFUSED)
    done = desk.run("-p", "desk-a", "-o", "json", "recon", "resolve",
                    str(ids[f"{sale}-REF1"]), "--note", "booked by hand, ticket 7",
                    expect=0).json()
    assert (done["state"], done["resolution"]) == ("resolved", "booked by hand, ticket 7")

    listed = desk.run("-p", "desk-a", "-o", "json", "recon", "findings", "--open",
                      expect=0).json()["findings"]
    assert [f["reference"] for f in listed] == [f"{sale}-DASH1"], listed
    csv = desk.run("-p", "desk-a", "-o", "csv", "recon", "findings", expect=0).stdout
    assert csv.splitlines()[0].startswith("id,state,kind,"), csv

    after = desk.run(*recon, expect=MISMATCH).json()
    assert [f["reference"] for f in after["unconfirmed"]] == [], after
    assert [f["reference"] for f in after["unrecorded"]] == [f"{sale}-DASH1"], after
    assert [f["finding"]["state"] for f in after["resolved"]] == ["resolved"], after
    # money moved with no desk entry: who recorded the finding may not close it (their
    # own off-desk movement, maybe); in a file of one person it stays open
    own = desk.run("-p", "desk-a", "recon", "resolve", str(ids[f"{sale}-DASH1"]), "--note",
                   "shop's dashboard", expect=REFUSED)
    assert "another approver resolves it" in own.stderr, own
    desk.run(*recon, expect=MISMATCH)
    desk.run("history", "verify", expect=0)


def test_the_maker_of_a_movement_may_not_resolve_its_finding(desk: Desk) -> None:  # noqa: F811
    sale = desk.sale(unique("LM"), "50.00")
    desk.run("-p", "desk-a", "refund", sale, "--amount", "5.00", "--yes", expect=0)
    history = Path(desk.env["WALLETCTL_AUDIT_LOG"])
    # an entry of this OS account's that the gateway does not confirm
    from walletctl.history.recorder import os_user
    from walletctl.history.store import Completion, Intent
    from walletctl.models.entries import now_utc

    with open_location(history, create=True, purpose="test") as store:
        entry = store.begin(Intent(
            time=now_utc(), os_user=os_user(), host="here", profile="desk-a",
            base_url="http://gateway.invalid", operation="refund", original_ref=sale,
            new_ref=f"{sale}-LOST", amount="1.00", currency="EUR",
            merchant_id=desk.merchant_id, store_id=desk.store_id))
        store.complete(entry, Completion(time=now_utc(), outcome="approved"))
    doc = desk.run("-p", "desk-a", "-o", "json", "recon", "--ref", sale, "--record",
                   expect=MISMATCH).json()
    [lost] = doc["unconfirmed"]
    refused = desk.run("-p", "desk-a", "recon", "resolve", str(lost["finding"]["id"]),
                       "--note", "mine is fine", expect=REFUSED)
    assert "own movement" in refused.stderr, refused
