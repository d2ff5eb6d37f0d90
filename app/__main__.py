import sys

from tilestudio.core.cli import main

sys.exit(main())
