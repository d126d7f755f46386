import sys

from lifebench.cli import main

sys.exit(main())
