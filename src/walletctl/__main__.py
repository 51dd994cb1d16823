from walletctl.cli.main import run

run()
