import sys

from optrace.cli import main

sys.exit(main())
