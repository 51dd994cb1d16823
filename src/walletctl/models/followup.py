"""Follow-up transactions (spec 2.3 request, 2.4 response): capture, refund, reversal."""

from __future__ import annotations

from typing import Annotated, ClassVar, Final

from pydantic import BeforeValidator, PrivateAttr, model_validator

from walletctl.constants import APM_PROVIDER
from walletctl.models.base import ResponseModel, WireModel, spelled_as
from walletctl.models.checkout import Provider, ShoppingCartDetails
from walletctl.models.fields import Currency, PositiveMoney, Reference, Text
from walletctl.models.money import quantize
from walletctl.models.operations import OP_OF_WIRE_TYPE, WIRE_TYPE_OF, Op, WireType

Operation = Op
OPERATION_TYPES: Final[dict[str, WireType]] = WIRE_TYPE_OF


FollowUpType = Annotated[WireType, BeforeValidator(spelled_as(*OP_OF_WIRE_TYPE))]


class ApmRequestDetails(WireModel):
    """``apmDetails.apmProvider``; the spec's sample names it ``apmProviderName``."""

    _variants: ClassVar[dict[str, str]] = {"apmprovidername": "apmProvider"}

    apm_provider: Provider = APM_PROVIDER


class FollowUpRequest(WireModel):
    merchant_id: Text
    store_id: Text
    user_id: Text
    type: FollowUpType
    amount: PositiveMoney
    currency_code: Currency
    client_system_transaction_id: Reference
    client_system_invoice_id: Reference
    provider_discretionary_data: Text | None = None
    apm_details: ApmRequestDetails
    # Carried by the spec's sample with no table entry; accepted, never required.
    shopping_cart_details: ShoppingCartDetails | None = None

    @model_validator(mode="after")
    def _rules(self) -> FollowUpRequest:
        try:
            quantize(self.amount, self.currency_code)
        except ValueError as exc:
            raise ValueError(f"amount: {exc}") from None
        if self.client_system_transaction_id == self.client_system_invoice_id:
            raise ValueError(
                "clientSystemTransactionId: must be a new reference, not the original's "
                "(clientSystemInvoiceId)"
            )
        return self

    @property
    def operation(self) -> Operation:
        return OP_OF_WIRE_TYPE[self.type]


class ApmResponseDetails(ResponseModel):
    _variants: ClassVar[dict[str, str]] = {"apmprovider": "apmProviderName"}

    apm_provider_name: str | None = None
    apm_payment_method: str | None = None


class FollowUpResponse(ResponseModel):
    id: str | None = None
    state: str
    provider_state_code: str | None = None
    currency_code: str | None = None
    client_system_transaction_id: str | None = None
    apm_details: ApmResponseDetails | None = None
    # not on the wire's body: set from the answer's X-Sandbox-Replayed header
    _replayed: bool = PrivateAttr(default=False)

    @property
    def replayed(self) -> bool:
        """The gateway replayed the stored answer of an identical earlier request under the
        same reference: nothing was applied by this one."""
        return self._replayed

    def mark_replayed(self) -> None:
        self._replayed = True
