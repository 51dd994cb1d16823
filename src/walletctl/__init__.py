"""walletctl: a terminal tool and local sandbox for a payment gateway's wallet APIs."""

__version__ = "0.1.0"
