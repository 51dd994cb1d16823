"""``walletctl sandbox 3ds ACCOUNT``: the sandbox's simulated 3DS challenge for a ``Card``
(PAN_ONLY) payment account, as the cardholder would pass or fail it.

The answer (``-o json``, the default when stdout is not a terminal) is what
``walletctl authorize --3ds FILE|-`` reads, account id included::

    walletctl sandbox 3ds ta_... | walletctl authorize --3ds - --ref ORDER-1 --amount 12.34 --yes
"""

from __future__ import annotations

from typing import Annotated

import typer

from walletctl.cli.sandbox import sandbox_app
from walletctl.cli.sandbox_common import URL_HELP, base_url, call
from walletctl.cli.state import get_state

RESULTS = {"pass": "success", "fail": "failure"}


@sandbox_app.command("3ds")
def three_ds_cmd(
    ctx: typer.Context,
    account: Annotated[str, typer.Argument(
        help="The Card (PAN_ONLY) account's transactionAccountId.")],
    result: Annotated[str, typer.Option(
        "--result", help="pass (transStatus Y: the authorization is approved) or fail "
                         "(N: declined, AuthenticationFailed).")] = "pass",
    url: Annotated[str | None, typer.Option("--url", help=URL_HELP)] = None,
    merchant_id: Annotated[str | None, typer.Option(
        "--merchant-id", help="The account's merchant (default: the profile's).")] = None,
    store_id: Annotated[str | None, typer.Option(
        "--store-id", help="The account's store (default: the profile's).")] = None,
) -> None:
    """Run the sandbox's 3DS challenge for a Card account; print the result for authorize."""
    from walletctl.client.checks import check_identifier
    from walletctl.errors import UsageError
    from walletctl.render.sandbox import render_three_ds

    outcome = RESULTS.get(result.strip().lower())
    if outcome is None:
        raise UsageError(f"--result: must be pass or fail (got {result[:20]!r})")
    check_identifier(account, "ACCOUNT", max_length=255)
    base, ids = base_url(ctx, url, "3ds")
    merchant = merchant_id or ids.get("merchantId")
    store = store_id or ids.get("storeId")
    if not (merchant and store):  # --url: the account's merchant is still the profile's
        profile = get_state(ctx).profile()
        merchant, store = merchant or profile.merchant_id, store or profile.store_id
    data = call("POST", f"{base}/_sandbox/3ds/challenge", json_body={
        "transactionAccountId": account, "merchantId": merchant, "storeId": store,
        "outcome": outcome})
    if not isinstance(data, dict):
        from walletctl.errors import ResponseError

        raise ResponseError("the sandbox's 3DS challenge answered no JSON object")
    answer = {"transactionAccountId": account,
              **{k: data.get(k) for k in ("threeDSServerTransId", "authenticationValue", "eci",
                                          "transStatus")}}
    render_three_ds(answer, get_state(ctx).output_format)
