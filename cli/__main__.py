"""`python -m cli`: the same command line as `python agent.py`."""
import sys

from cli import main

sys.exit(main())
