from embtie.cli import entry

entry()
