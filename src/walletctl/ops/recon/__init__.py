"""``walletctl recon``: the desk's history and batch journals against the gateway (``run``
reads and looks up, ``compare`` judges one order, ``on_file`` keeps findings).
"""
