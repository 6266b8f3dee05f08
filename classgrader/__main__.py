import sys

from classgrader.cli import main

sys.exit(main())
