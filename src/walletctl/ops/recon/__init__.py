"""``walletctl recon``: the desk's history and batch journals against the gateway.

``run.reconcile`` is the operation; ``sources`` reads what the desk recorded, ``compare``
judges one order's lookup, ``model`` holds the findings and the exit code's rule.
"""
