"""``python -m registre``: the ``registre`` command line."""

from registre.cli import main

main()
