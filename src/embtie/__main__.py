import sys

from embtie.cli import main

sys.exit(main())
